package broker

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
)

// handler is one API key: the versions advertised (min..max), the lowest
// version actually served (older ones close the connection, as in Kafka 4),
// and the function that serves it.
type handler struct {
	min, max int16
	serveMin int16
	serve    func(*Broker, context.Context, *request) (kmsg.Response, error)
}

// handlers drives both dispatch and ApiVersions.
//
// Produce advertises from v0 although v0-2 are refused: librdkafka (<= 2.11)
// enables compression only if the advertised range contains v0
// (KAFKA-18659), as Kafka 4.x does.
var handlers = map[kmsg.Key]handler{
	kmsg.Produce:                 {0, 13, 3, (*Broker).handleProduce},
	kmsg.Fetch:                   {4, 18, 4, (*Broker).handleFetch},
	kmsg.ListOffsets:             {1, 11, 1, (*Broker).handleListOffsets},
	kmsg.Metadata:                {0, 13, 0, (*Broker).handleMetadata},
	kmsg.ApiVersions:             {0, 5, 0, (*Broker).handleApiVersions},
	kmsg.CreateTopics:            {2, 7, 2, (*Broker).handleCreateTopics},
	kmsg.DeleteTopics:            {1, 6, 1, (*Broker).handleDeleteTopics},
	kmsg.DeleteRecords:           {0, 2, 0, (*Broker).handleDeleteRecords},
	kmsg.InitProducerID:          {0, 5, 0, (*Broker).handleInitProducerID},
	kmsg.OffsetForLeaderEpoch:    {2, 4, 2, (*Broker).handleOffsetForLeaderEpoch},
	kmsg.DescribeConfigs:         {1, 4, 1, (*Broker).handleDescribeConfigs},
	kmsg.AlterConfigs:            {0, 2, 0, (*Broker).handleAlterConfigs},
	kmsg.CreatePartitions:        {0, 3, 0, (*Broker).handleCreatePartitions},
	kmsg.IncrementalAlterConfigs: {0, 1, 0, (*Broker).handleIncrementalAlterConfigs},
	kmsg.ListConfigResources:     {0, 1, 0, (*Broker).handleListConfigResources},
	kmsg.DescribeCluster:         {0, 2, 0, (*Broker).handleDescribeCluster},
	kmsg.DescribeQuorum:          {0, 2, 0, (*Broker).handleDescribeQuorum},
	kmsg.UpdateFeatures:          {0, 2, 0, (*Broker).handleUpdateFeatures},
	kmsg.ElectLeaders:            {0, 2, 0, (*Broker).handleElectLeaders},
	kmsg.FindCoordinator:         {0, 6, 0, (*Broker).handleFindCoordinator},
	kmsg.JoinGroup:               {0, 9, 0, (*Broker).handleJoinGroup},
	kmsg.SyncGroup:               {0, 5, 0, (*Broker).handleSyncGroup},
	kmsg.Heartbeat:               {0, 4, 0, (*Broker).handleHeartbeat},
	kmsg.LeaveGroup:              {0, 5, 0, (*Broker).handleLeaveGroup},
	kmsg.OffsetCommit:            {2, 10, 2, (*Broker).handleOffsetCommit},
	kmsg.OffsetFetch:             {1, 10, 1, (*Broker).handleOffsetFetch},
	kmsg.DescribeGroups:          {0, 6, 0, (*Broker).handleDescribeGroups},
	kmsg.ListGroups:              {0, 5, 0, (*Broker).handleListGroups},
	kmsg.DeleteGroups:            {0, 3, 0, (*Broker).handleDeleteGroups},
	kmsg.OffsetDelete:            {0, 0, 0, (*Broker).handleOffsetDelete},
	kmsg.WriteTxnMarkers:         {1, 2, 1, (*Broker).handleWriteTxnMarkers},
	kmsg.DescribeTopicPartitions: {0, 0, 0, (*Broker).handleDescribeTopicPartitions},
	kmsg.ConsumerGroupHeartbeat:  {0, 1, 0, (*Broker).handleConsumerGroupHeartbeat},
	kmsg.ConsumerGroupDescribe:   {0, 1, 0, (*Broker).handleConsumerGroupDescribe},
	kmsg.DescribeProducers:       {0, 0, 0, (*Broker).handleDescribeProducers},
	kmsg.AddPartitionsToTxn:      {0, 5, 0, (*Broker).handleAddPartitionsToTxn},
	kmsg.AddOffsetsToTxn:         {0, 4, 0, (*Broker).handleAddOffsetsToTxn},
	kmsg.EndTxn:                  {0, 5, 0, (*Broker).handleEndTxn},
	kmsg.TxnOffsetCommit:         {0, 5, 0, (*Broker).handleTxnOffsetCommit},
	kmsg.DescribeTransactions:    {0, 0, 0, (*Broker).handleDescribeTransactions},
	kmsg.ListTransactions:        {0, 2, 0, (*Broker).handleListTransactions},

	// Security (sasl.go, 50_user_scram_credentials.go,
	// 38_delegation_tokens.go), apart so that its
	// longer names leave the alignment above alone.
	kmsg.SASLHandshake:                {0, 1, 0, (*Broker).handleSaslHandshake},
	kmsg.SASLAuthenticate:             {0, 2, 0, (*Broker).handleSaslAuthenticate},
	kmsg.DescribeUserSCRAMCredentials: {0, 0, 0, (*Broker).handleDescribeUserScramCredentials},
	kmsg.AlterUserSCRAMCredentials:    {0, 0, 0, (*Broker).handleAlterUserScramCredentials},
	kmsg.DescribeACLs:                 {1, 3, 1, (*Broker).handleDescribeAcls},
	kmsg.CreateACLs:                   {1, 3, 1, (*Broker).handleCreateAcls},
	kmsg.DeleteACLs:                   {1, 3, 1, (*Broker).handleDeleteAcls},
	kmsg.DescribeClientQuotas:         {0, 1, 0, (*Broker).handleDescribeClientQuotas},
	kmsg.AlterClientQuotas:            {0, 1, 0, (*Broker).handleAlterClientQuotas},
	kmsg.CreateDelegationToken:        {1, 3, 1, (*Broker).handleCreateDelegationToken},
	kmsg.RenewDelegationToken:         {1, 2, 1, (*Broker).handleRenewDelegationToken},
	kmsg.ExpireDelegationToken:        {1, 2, 1, (*Broker).handleExpireDelegationToken},
	kmsg.DescribeDelegationToken:      {1, 3, 1, (*Broker).handleDescribeDelegationToken},

	// Cluster operations (35_describe_log_dirs.go, 45_reassign.go,
	// 64_unregister_broker.go).
	kmsg.AlterReplicaLogDirs:        {1, 2, 1, (*Broker).handleAlterReplicaLogDirs},
	kmsg.DescribeLogDirs:            {1, 5, 1, (*Broker).handleDescribeLogDirs},
	kmsg.AlterPartitionAssignments:  {0, 1, 0, (*Broker).handleAlterPartitionAssignments},
	kmsg.ListPartitionReassignments: {0, 0, 0, (*Broker).handleListPartitionReassignments},
	kmsg.UnregisterBroker:           {0, 0, 0, (*Broker).handleUnregisterBroker},

	// Share groups, KIP-932 (76_share_group.go, 78_share_fetch.go,
	// 90_share_group_offsets.go).
	kmsg.ShareGroupHeartbeat:       {1, 1, 1, (*Broker).handleShareGroupHeartbeat},
	kmsg.ShareGroupDescribe:        {1, 1, 1, (*Broker).handleShareGroupDescribe},
	kmsg.ShareFetch:                {1, 2, 1, (*Broker).handleShareFetch},
	kmsg.ShareAcknowledge:          {1, 2, 1, (*Broker).handleShareAcknowledge},
	kmsg.DescribeShareGroupOffsets: {0, 1, 0, (*Broker).handleDescribeShareGroupOffsets},
	kmsg.AlterShareGroupOffsets:    {0, 0, 0, (*Broker).handleAlterShareGroupOffsets},
	kmsg.DeleteShareGroupOffsets:   {0, 0, 0, (*Broker).handleDeleteShareGroupOffsets},
	kmsg.ReadShareGroupState:       {0, 0, 0, (*Broker).handleReadShareGroupState},
	kmsg.WriteShareGroupState:      {0, 1, 0, (*Broker).handleWriteShareGroupState},

	// Streams groups, KIP-1071 (88_streams_group.go).
	kmsg.StreamsGroupHeartbeat:                 {0, 1, 0, (*Broker).handleStreamsGroupHeartbeat},
	kmsg.StreamsGroupDescribe:                  {0, 1, 0, (*Broker).handleStreamsGroupDescribe},
	kmsg.StreamsGroupTopologyDescriptionUpdate: {0, 0, 0, (*Broker).handleStreamsGroupTopologyDescriptionUpdate},
}

// advertisedVersions is the ApiVersions table, sorted by key. New stores it
// in the broker, which keeps handlers free of an initialisation cycle.
func advertisedVersions() []protocol.VersionRange {
	var vs []protocol.VersionRange
	for k, h := range handlers {
		vs = append(vs, protocol.VersionRange{Key: int16(k), Min: h.min, Max: h.max})
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Key < vs[j].Key })
	return vs
}

// dispatch decodes the body and runs the handler. An error closes the
// connection; a nil response with a nil error sends nothing (acks=0).
func (b *Broker) dispatch(ctx context.Context, r *request, body []byte) (resp kmsg.Response, err error) {
	// A bug in a handler must cost one connection, not the broker.
	defer func() {
		if p := recover(); p != nil {
			b.panics.Add(1)
			b.log.Error("handler panic", "api", kmsg.NameForKey(r.hdr.Key), "version", r.hdr.Version,
				"panic", p, "stack", string(debug.Stack()))
			resp, err = nil, fmt.Errorf("%w: handler panic: %v", errCloseConn, p)
		}
	}()
	key := kmsg.Key(r.hdr.Key)
	h, ok := handlers[key]
	if !ok {
		return nil, fmt.Errorf("%w: unsupported api key %d", errCloseConn, r.hdr.Key)
	}
	if r.hdr.Version < h.serveMin || r.hdr.Version > h.max {
		if key == kmsg.ApiVersions && r.hdr.Version > h.max {
			// Answer in v0, whose response header never has tags.
			r.hdr.Version, r.hdr.Flexible = 0, false
			return protocol.UnsupportedApiVersions(protocol.VersionRange{Key: int16(key), Min: h.min, Max: h.max}), nil
		}
		return nil, fmt.Errorf("%w: %s v%d outside v%d-v%d", errCloseConn, key.Name(), r.hdr.Version, h.serveMin, h.max)
	}
	req, err := protocol.DecodeBody(r.hdr, body)
	if err != nil {
		return nil, err
	}
	r.body = req
	if r.times != nil {
		r.times.start = time.Now()
	}
	r.started = time.Now()
	resp, err = b.serveAuthorized(ctx, r, h.serve) // authz_apis.go
	if err != nil {
		return nil, err
	}
	b.requestQuota(r, resp) // 48_client_quotas.go
	if resp != nil {
		resp.SetVersion(r.hdr.Version)
	}
	return resp, nil
}
