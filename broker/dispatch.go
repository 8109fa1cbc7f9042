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
// the function that serves it, and what it authorizes (authz_apis.go; nil:
// with an authorizer, served to super users only).
type handler struct {
	min, max int16
	serveMin int16
	serve    func(*Broker, context.Context, *request) (kmsg.Response, error)
	access   *access
}

// handlers drives both dispatch and ApiVersions.
//
// Produce advertises from v0 although v0-2 are refused: librdkafka (<= 2.11)
// enables compression only if the advertised range contains v0
// (KAFKA-18659), as Kafka 4.x does.
var handlers = map[kmsg.Key]handler{
	kmsg.Produce:                   {0, 13, 3, (*Broker).handleProduce, azProduce},
	kmsg.Fetch:                     {4, 18, 4, (*Broker).handleFetch, azFetch},
	kmsg.ListOffsets:               {1, 11, 1, (*Broker).handleListOffsets, azListOffsets},
	kmsg.Metadata:                  {0, 13, 0, (*Broker).handleMetadata, azMetadata},
	kmsg.ApiVersions:               {0, 5, 0, (*Broker).handleApiVersions, noAccess},
	kmsg.CreateTopics:              {2, 7, 2, (*Broker).handleCreateTopics, azCreateTopics},
	kmsg.DeleteTopics:              {1, 6, 1, (*Broker).handleDeleteTopics, azDeleteTopics},
	kmsg.DeleteRecords:             {0, 2, 0, (*Broker).handleDeleteRecords, azDeleteRecords},
	kmsg.InitProducerID:            {0, 5, 0, (*Broker).handleInitProducerID, azInitProducerID},
	kmsg.OffsetForLeaderEpoch:      {2, 4, 2, (*Broker).handleOffsetForLeaderEpoch, azOffsetForLeaderEpoch},
	kmsg.DescribeConfigs:           {1, 4, 1, (*Broker).handleDescribeConfigs, azDescribeConfigs},
	kmsg.AlterConfigs:              {0, 2, 0, (*Broker).handleAlterConfigs, azAlterConfigs},
	kmsg.CreatePartitions:          {0, 3, 0, (*Broker).handleCreatePartitions, azCreatePartitions},
	kmsg.IncrementalAlterConfigs:   {0, 1, 0, (*Broker).handleIncrementalAlterConfigs, azIncrementalAlterConfigs},
	kmsg.ListConfigResources:       {0, 1, 0, (*Broker).handleListConfigResources, azListConfigResources},
	kmsg.GetTelemetrySubscriptions: {0, 0, 0, (*Broker).handleGetTelemetrySubscriptions, anyPrincipal},
	kmsg.PushTelemetry:             {0, 0, 0, (*Broker).handlePushTelemetry, anyPrincipal},
	kmsg.DescribeCluster:           {0, 2, 0, (*Broker).handleDescribeCluster, azDescribeCluster},
	kmsg.DescribeQuorum:            {0, 2, 0, (*Broker).handleDescribeQuorum, azClusterDescribe},
	kmsg.UpdateFeatures:            {0, 2, 0, (*Broker).handleUpdateFeatures, azClusterAlter},
	kmsg.ElectLeaders:              {0, 2, 0, (*Broker).handleElectLeaders, azElectLeaders},
	kmsg.FindCoordinator:           {0, 6, 0, (*Broker).handleFindCoordinator, azFindCoordinator},
	kmsg.JoinGroup:                 {0, 9, 0, (*Broker).handleJoinGroup, azGroupMember},
	kmsg.SyncGroup:                 {0, 5, 0, (*Broker).handleSyncGroup, azGroupMember},
	kmsg.Heartbeat:                 {0, 4, 0, (*Broker).handleHeartbeat, azGroupMember},
	kmsg.LeaveGroup:                {0, 5, 0, (*Broker).handleLeaveGroup, azGroupMember},
	kmsg.OffsetCommit:              {2, 10, 2, (*Broker).handleOffsetCommit, azOffsetCommit},
	kmsg.OffsetFetch:               {1, 10, 1, (*Broker).handleOffsetFetch, azOffsetFetch},
	kmsg.DescribeGroups:            {0, 6, 0, (*Broker).handleDescribeGroups, azDescribeGroups},
	kmsg.ListGroups:                {0, 5, 0, (*Broker).handleListGroups, azListGroups},
	kmsg.DeleteGroups:              {0, 3, 0, (*Broker).handleDeleteGroups, azDeleteGroups},
	kmsg.OffsetDelete:              {0, 0, 0, (*Broker).handleOffsetDelete, azOffsetDelete},
	kmsg.WriteTxnMarkers:           {1, 2, 1, (*Broker).handleWriteTxnMarkers, azWriteTxnMarkers},
	kmsg.DescribeTopicPartitions:   {0, 0, 0, (*Broker).handleDescribeTopicPartitions, azDescribeTopicPartitions},
	kmsg.ConsumerGroupHeartbeat:    {0, 1, 0, (*Broker).handleConsumerGroupHeartbeat, azConsumerGroupHeartbeat},
	kmsg.ConsumerGroupDescribe:     {0, 1, 0, (*Broker).handleConsumerGroupDescribe, azConsumerGroupDescribe},
	kmsg.DescribeProducers:         {0, 0, 0, (*Broker).handleDescribeProducers, azDescribeProducers},
	kmsg.AddPartitionsToTxn:        {0, 5, 0, (*Broker).handleAddPartitionsToTxn, azAddPartitionsToTxn},
	kmsg.AddOffsetsToTxn:           {0, 4, 0, (*Broker).handleAddOffsetsToTxn, azAddOffsetsToTxn},
	kmsg.EndTxn:                    {0, 5, 0, (*Broker).handleEndTxn, azEndTxn},
	kmsg.TxnOffsetCommit:           {0, 5, 0, (*Broker).handleTxnOffsetCommit, azTxnOffsetCommit},
	kmsg.DescribeTransactions:      {0, 0, 0, (*Broker).handleDescribeTransactions, azDescribeTransactions},
	kmsg.ListTransactions:          {0, 2, 0, (*Broker).handleListTransactions, azListTransactions},

	// Security (sasl.go, 50_user_scram_credentials.go,
	// 38_delegation_tokens.go), apart so that its
	// longer names leave the alignment above alone.
	kmsg.SASLHandshake:                {0, 1, 0, (*Broker).handleSaslHandshake, noAccess},
	kmsg.SASLAuthenticate:             {0, 2, 0, (*Broker).handleSaslAuthenticate, noAccess},
	kmsg.DescribeUserSCRAMCredentials: {0, 0, 0, (*Broker).handleDescribeUserScramCredentials, azClusterDescribe},
	kmsg.AlterUserSCRAMCredentials:    {0, 0, 0, (*Broker).handleAlterUserScramCredentials, azClusterAlter},
	kmsg.DescribeACLs:                 {1, 3, 1, (*Broker).handleDescribeAcls, azClusterDescribe},
	kmsg.CreateACLs:                   {1, 3, 1, (*Broker).handleCreateAcls, azClusterAlter},
	kmsg.DeleteACLs:                   {1, 3, 1, (*Broker).handleDeleteAcls, azClusterAlter},
	kmsg.DescribeClientQuotas:         {0, 1, 0, (*Broker).handleDescribeClientQuotas, azClusterDescribeConfigs},
	kmsg.AlterClientQuotas:            {0, 1, 0, (*Broker).handleAlterClientQuotas, azClusterAlterConfigs},
	kmsg.CreateDelegationToken:        {1, 3, 1, (*Broker).handleCreateDelegationToken, azCreateDelegationToken},
	kmsg.RenewDelegationToken:         {1, 2, 1, (*Broker).handleRenewDelegationToken, azTokenOwner},
	kmsg.ExpireDelegationToken:        {1, 2, 1, (*Broker).handleExpireDelegationToken, azTokenOwner},
	kmsg.DescribeDelegationToken:      {1, 3, 1, (*Broker).handleDescribeDelegationToken, azDescribeDelegationToken},

	// Cluster operations (35_describe_log_dirs.go, 45_reassign.go,
	// 64_unregister_broker.go).
	kmsg.AlterReplicaLogDirs:        {1, 2, 1, (*Broker).handleAlterReplicaLogDirs, azAlterReplicaLogDirs},
	kmsg.DescribeLogDirs:            {1, 5, 1, (*Broker).handleDescribeLogDirs, azDescribeLogDirs},
	kmsg.AlterPartitionAssignments:  {0, 1, 0, (*Broker).handleAlterPartitionAssignments, azAlterPartitionAssign},
	kmsg.ListPartitionReassignments: {0, 0, 0, (*Broker).handleListPartitionReassignments, azListReassignments},
	kmsg.UnregisterBroker:           {0, 0, 0, (*Broker).handleUnregisterBroker, azClusterAlter},

	// Share groups, KIP-932 (76_share_group.go, 78_share_fetch.go,
	// 90_share_group_offsets.go).
	kmsg.ShareGroupHeartbeat:       {1, 1, 1, (*Broker).handleShareGroupHeartbeat, azShareGroupHeartbeat},
	kmsg.ShareGroupDescribe:        {1, 1, 1, (*Broker).handleShareGroupDescribe, azShareGroupDescribe},
	kmsg.ShareFetch:                {1, 2, 1, (*Broker).handleShareFetch, azShareFetch},
	kmsg.ShareAcknowledge:          {1, 2, 1, (*Broker).handleShareAcknowledge, azShareFetch},
	kmsg.DescribeShareGroupOffsets: {0, 1, 0, (*Broker).handleDescribeShareGroupOffsets, azDescribeShareGroupOffsets},
	kmsg.AlterShareGroupOffsets:    {0, 0, 0, (*Broker).handleAlterShareGroupOffsets, azAlterShareGroupOffsets},
	kmsg.DeleteShareGroupOffsets:   {0, 0, 0, (*Broker).handleDeleteShareGroupOffsets, azDeleteShareGroupOffsets},
	kmsg.ReadShareGroupState:       {0, 0, 0, (*Broker).handleReadShareGroupState, azShareGroupState},
	kmsg.WriteShareGroupState:      {0, 1, 0, (*Broker).handleWriteShareGroupState, azShareGroupState},

	// Streams groups, KIP-1071 (88_streams_group.go).
	kmsg.StreamsGroupHeartbeat:                 {0, 1, 0, (*Broker).handleStreamsGroupHeartbeat, azStreamsGroupHeartbeat},
	kmsg.StreamsGroupDescribe:                  {0, 1, 0, (*Broker).handleStreamsGroupDescribe, azStreamsGroupDescribe},
	kmsg.StreamsGroupTopologyDescriptionUpdate: {0, 0, 0, (*Broker).handleStreamsGroupTopologyDescriptionUpdate, azStreamsGroupTopologyUpdate},
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
	resp, err = b.serveAuthorized(ctx, r, h) // authz_apis.go
	if err != nil {
		return nil, err
	}
	b.requestQuota(r, resp) // 48_client_quotas.go
	if resp != nil {
		resp.SetVersion(r.hdr.Version)
	}
	return resp, nil
}
