package restproxy

// v3 (kafka-rest's resources/v3): clusters, brokers, topics with their
// configs and partitions, consumer groups with their lag, and produce
// (a stream of records in one request, answered by a stream).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (p *Proxy) v3Routes(add func(string, route)) {
	const c = "/v3/clusters/{cluster}"
	add("/v3/clusters", route{"GET": p.v3(listClusters)})
	add(c, route{"GET": p.v3(getCluster)})
	add(c+"/brokers", route{"GET": p.v3(listBrokers)})
	add(c+"/brokers/{broker}", route{"GET": p.v3(getBroker)})
	add(c+"/topics", route{"GET": p.v3(listTopicsV3), "POST": p.v3(createTopic)})
	add(c+"/topics/{topic}", route{"GET": p.v3(getTopicV3), "DELETE": p.v3(deleteTopic)})
	add(c+"/topics/{topic}/configs", route{"GET": p.v3(listTopicConfigs)})
	add(c+"/topics/{topic}/configs/{name}", route{"GET": p.v3(getTopicConfig), "PUT": p.v3(setTopicConfig), "DELETE": p.v3(resetTopicConfig)})
	add(c+"/topics/{topic}/partitions", route{"GET": p.v3(listPartitionsV3)})
	add(c+"/topics/{topic}/partitions/{partition}", route{"GET": p.v3(getPartitionV3)})
	add(c+"/topics/{topic}/records", route{"POST": p.v3(produceV3)})
	add(c+"/topics/{topic}/records:batch", route{"POST": p.v3(produceBatch)})
	add(c+"/consumer-groups", route{"GET": p.v3(listGroups)})
	add(c+"/consumer-groups/{group}", route{"GET": p.v3(getGroup)})
	add(c+"/consumer-groups/{group}/consumers", route{"GET": p.v3(listGroupConsumers)})
	add(c+"/consumer-groups/{group}/lags", route{"GET": p.v3(listLags)})
	add(c+"/consumer-groups/{group}/lag-summary", route{"GET": p.v3(lagSummary)})
}

// v3req is what a v3 handler gets: the request, the user's client, the
// cluster's metadata and the base of its URLs.
type v3req struct {
	p    *Proxy
	w    http.ResponseWriter
	r    *http.Request
	u    *userClient
	md   kadm.Metadata
	base string // http://host:port/v3/clusters/{id}
}

func (q *v3req) ctx() context.Context { return q.r.Context() }

// v3 makes a v3 handler: JSON answers, the user's client, and the
// cluster the path names (404 for another).
func (p *Proxy) v3(f func(q *v3req) (any, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		w.Header().Set("Content-Type", mediaJSON)
		u, err := p.client(r)
		if err != nil {
			return nil, err
		}
		md, err := u.adm.BrokerMetadata(r.Context())
		if err != nil {
			return nil, err
		}
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		q := &v3req{p: p, w: w, r: r, u: u, md: md, base: scheme + "://" + r.Host + "/v3/clusters/" + md.Cluster}
		if id := r.PathValue("cluster"); id != "" && id != md.Cluster {
			return nil, errf(404, 404, "Cluster %s cannot be found.", id)
		}
		return f(q)
	}
}

type v3Meta struct {
	Self         string  `json:"self"`
	ResourceName *string `json:"resource_name,omitempty"`
	Next         *string `json:"next,omitempty"`
}

type related struct {
	Related string `json:"related"`
}

// list is a v3 collection: kind, metadata and data.
type list struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Self string  `json:"self"`
		Next *string `json:"next"`
	} `json:"metadata"`
	Data any `json:"data"`
}

func newList(kind, self string, data any) list {
	l := list{Kind: kind, Data: data}
	l.Metadata.Self = self
	return l
}

func meta(self, crn string) v3Meta {
	return v3Meta{Self: self, ResourceName: &crn}
}

func (q *v3req) crn(parts ...string) string {
	return "crn:///kafka=" + q.md.Cluster + strings.Join(parts, "")
}

type clusterData struct {
	Kind           string   `json:"kind"`
	Metadata       v3Meta   `json:"metadata"`
	ClusterID      string   `json:"cluster_id"`
	Controller     *related `json:"controller,omitempty"`
	ACLs           related  `json:"acls"`
	Brokers        related  `json:"brokers"`
	BrokerConfigs  related  `json:"broker_configs"`
	ConsumerGroups related  `json:"consumer_groups"`
	Topics         related  `json:"topics"`
	Reassignments  related  `json:"partition_reassignments"`
}

func (q *v3req) cluster() clusterData {
	b := q.base
	c := clusterData{Kind: "KafkaCluster", Metadata: meta(b, q.crn()), ClusterID: q.md.Cluster,
		ACLs: related{b + "/acls"}, Brokers: related{b + "/brokers"}, BrokerConfigs: related{b + "/broker-configs"},
		ConsumerGroups: related{b + "/consumer-groups"}, Topics: related{b + "/topics"},
		Reassignments: related{b + "/topics/-/partitions/-/reassignment"}}
	if q.md.Controller >= 0 {
		c.Controller = &related{fmt.Sprintf("%s/brokers/%d", b, q.md.Controller)}
	}
	return c
}

func listClusters(q *v3req) (any, error) {
	self := strings.TrimSuffix(q.base, "/"+q.md.Cluster)
	return newList("KafkaClusterList", self, []clusterData{q.cluster()}), nil
}

func getCluster(q *v3req) (any, error) { return q.cluster(), nil }

type brokerData struct {
	Kind              string  `json:"kind"`
	Metadata          v3Meta  `json:"metadata"`
	ClusterID         string  `json:"cluster_id"`
	BrokerID          int32   `json:"broker_id"`
	Host              string  `json:"host"`
	Port              int32   `json:"port"`
	Rack              *string `json:"rack"`
	Configs           related `json:"configs"`
	PartitionReplicas related `json:"partition_replicas"`
}

func (q *v3req) broker(b kadm.BrokerDetail) brokerData {
	self := fmt.Sprintf("%s/brokers/%d", q.base, b.NodeID)
	return brokerData{Kind: "KafkaBroker", Metadata: meta(self, q.crn(fmt.Sprintf("/broker=%d", b.NodeID))), ClusterID: q.md.Cluster,
		BrokerID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, Configs: related{self + "/configs"}, PartitionReplicas: related{self + "/partition-replicas"}}
}

func listBrokers(q *v3req) (any, error) {
	out := []brokerData{}
	for _, b := range q.md.Brokers {
		out = append(out, q.broker(b))
	}
	slices.SortFunc(out, func(a, b brokerData) int { return int(a.BrokerID - b.BrokerID) })
	return newList("KafkaBrokerList", q.base+"/brokers", out), nil
}

func getBroker(q *v3req) (any, error) {
	id, err := pathInt(q.r, "broker")
	if err != nil {
		return nil, err
	}
	for _, b := range q.md.Brokers {
		if b.NodeID == id {
			return q.broker(b), nil
		}
	}
	return nil, errf(404, 404, "Broker %d cannot be found.", id)
}

type topicData struct {
	Kind              string   `json:"kind"`
	Metadata          v3Meta   `json:"metadata"`
	ClusterID         string   `json:"cluster_id"`
	TopicName         string   `json:"topic_name"`
	IsInternal        bool     `json:"is_internal"`
	ReplicationFactor int      `json:"replication_factor"`
	PartitionsCount   int      `json:"partitions_count"`
	Partitions        related  `json:"partitions"`
	Configs           related  `json:"configs"`
	Reassignments     related  `json:"partition_reassignments"`
	AuthorizedOps     []string `json:"authorized_operations,omitempty"`
}

func (q *v3req) topic(name string, internal bool, partitions, rf int) topicData {
	self := q.base + "/topics/" + name
	return topicData{Kind: "KafkaTopic", Metadata: meta(self, q.crn("/topic="+name)), ClusterID: q.md.Cluster, TopicName: name,
		IsInternal: internal, ReplicationFactor: rf, PartitionsCount: partitions, Partitions: related{self + "/partitions"},
		Configs: related{self + "/configs"}, Reassignments: related{self + "/partitions/-/reassignment"}, AuthorizedOps: []string{}}
}

func (q *v3req) topicOf(td kadm.TopicDetail) topicData {
	rf := 0
	for _, p := range td.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	return q.topic(td.Topic, td.IsInternal, len(td.Partitions), rf)
}

// errTopicV3 is v3's unknown topic (404 with UnknownTopicOrPartition's
// message and rest-utils' code).
func errTopicV3(name string) *restError {
	return errf(404, 40403, "This server does not host this topic-partition.")
}

// topicV3 is the metadata of one topic, 404 when unknown.
func (q *v3req) topicV3(name string) (kadm.TopicDetail, error) {
	md, err := q.u.adm.Metadata(q.ctx(), name)
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	td, ok := md.Topics[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return kadm.TopicDetail{}, errTopicV3(name)
	}
	return td, td.Err
}

func listTopicsV3(q *v3req) (any, error) {
	tds, err := q.u.adm.ListTopicsWithInternal(q.ctx())
	if err != nil {
		return nil, err
	}
	out := []topicData{}
	for _, td := range tds.Sorted() {
		if td.Err == nil {
			out = append(out, q.topicOf(td))
		}
	}
	return newList("KafkaTopicList", q.base+"/topics", out), nil
}

func getTopicV3(q *v3req) (any, error) {
	td, err := q.topicV3(q.r.PathValue("topic"))
	if err != nil {
		return nil, err
	}
	return q.topicOf(td), nil
}

// createTopicBody is CreateTopicRequest.
type createTopicBody struct {
	TopicName         string  `json:"topic_name"`
	PartitionsCount   *int32  `json:"partitions_count"`
	ReplicationFactor *int16  `json:"replication_factor"`
	ValidateOnly      bool    `json:"validate_only"`
	Configs           []entry `json:"configs"`
}

type entry struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

func createTopic(q *v3req) (any, error) {
	var req createTopicBody
	if _, err := decodeBody(q.r, &req, false); err != nil {
		return nil, err
	}
	if req.TopicName == "" {
		return nil, errf(400, 400, "topic_name is required")
	}
	parts, rf := int32(-1), int16(-1)
	if req.PartitionsCount != nil {
		parts = *req.PartitionsCount
	}
	if req.ReplicationFactor != nil {
		rf = *req.ReplicationFactor
	}
	configs := map[string]*string{}
	for _, c := range req.Configs {
		configs[c.Name] = c.Value
	}
	create := q.u.adm.CreateTopic
	if req.ValidateOnly {
		create = func(ctx context.Context, p int32, rf int16, c map[string]*string, t string) (kadm.CreateTopicResponse, error) {
			rs, err := q.u.adm.ValidateCreateTopics(ctx, p, rf, c, t)
			if err != nil {
				return kadm.CreateTopicResponse{}, err
			}
			return rs.On(t, nil)
		}
	}
	resp, err := create(q.ctx(), parts, rf, configs, req.TopicName)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		if resp.ErrMessage != "" {
			return nil, &restError{status: kafkaErr(err).status, code: kafkaErr(err).code, msg: resp.ErrMessage}
		}
		return nil, err
	}
	q.w.Header().Set("Location", q.base+"/topics/"+req.TopicName)
	writeJSON(q.w, http.StatusCreated, q.topic(req.TopicName, false, int(resp.NumPartitions), int(resp.ReplicationFactor)))
	return handled{}, nil
}

func deleteTopic(q *v3req) (any, error) {
	name := q.r.PathValue("topic")
	resp, err := q.u.adm.DeleteTopic(q.ctx(), name)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, errTopicV3(name)
	}
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

type configData struct {
	Kind        string    `json:"kind"`
	Metadata    v3Meta    `json:"metadata"`
	ClusterID   string    `json:"cluster_id"`
	TopicName   string    `json:"topic_name,omitempty"`
	BrokerID    *int32    `json:"broker_id,omitempty"`
	ConfigType  string    `json:"config_type,omitempty"`
	Name        string    `json:"name"`
	Value       *string   `json:"value"`
	IsDefault   bool      `json:"is_default"`
	IsReadOnly  bool      `json:"is_read_only"`
	IsSensitive bool      `json:"is_sensitive"`
	Source      string    `json:"source"`
	Synonyms    []synonym `json:"synonyms"`
}

type synonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

func (q *v3req) topicConfigs(topic string) ([]configData, error) {
	if _, err := q.topicV3(topic); err != nil {
		return nil, err
	}
	rcs, err := q.u.adm.DescribeTopicConfigs(q.ctx(), topic)
	if err != nil {
		return nil, err
	}
	out := []configData{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, rc.Err
		}
		for _, c := range rc.Configs {
			self := q.base + "/topics/" + topic + "/configs/" + c.Key
			cd := configData{Kind: "KafkaTopicConfig", Metadata: meta(self, q.crn("/topic="+topic+"/config="+c.Key)), ClusterID: q.md.Cluster,
				TopicName: topic, Name: c.Key, Value: c.Value, IsDefault: c.Source == kmsg.ConfigSourceDefaultConfig,
				IsSensitive: c.Sensitive, Source: c.Source.String(), Synonyms: []synonym{}}
			for _, s := range c.Synonyms {
				cd.Synonyms = append(cd.Synonyms, synonym{Name: s.Key, Value: s.Value, Source: s.Source.String()})
			}
			out = append(out, cd)
		}
	}
	slices.SortFunc(out, func(a, b configData) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func listTopicConfigs(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	cs, err := q.topicConfigs(topic)
	if err != nil {
		return nil, err
	}
	return newList("KafkaTopicConfigList", q.base+"/topics/"+topic+"/configs", cs), nil
}

func getTopicConfig(q *v3req) (any, error) {
	cs, err := q.topicConfigs(q.r.PathValue("topic"))
	if err != nil {
		return nil, err
	}
	name := q.r.PathValue("name")
	for _, c := range cs {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, errf(404, 404, "Config %s cannot be found for topic %s.", name, q.r.PathValue("topic"))
}

var setTopicConfig, resetTopicConfig = configSetters((*v3req).alterTopicConfig)

// configSetters are the PUT (set to the body's value) and DELETE (reset)
// of the path's config, through alter.
func configSetters(alter func(*v3req, kadm.AlterConfig) (any, error)) (set, reset func(*v3req) (any, error)) {
	set = func(q *v3req) (any, error) {
		var req struct {
			Value *string `json:"value"`
		}
		if _, err := decodeBody(q.r, &req, false); err != nil {
			return nil, err
		}
		return alter(q, kadm.AlterConfig{Op: kadm.SetConfig, Name: q.r.PathValue("name"), Value: req.Value})
	}
	reset = func(q *v3req) (any, error) {
		return alter(q, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: q.r.PathValue("name")})
	}
	return set, reset
}

func (q *v3req) alterTopicConfig(ac kadm.AlterConfig) (any, error) {
	topic := q.r.PathValue("topic")
	if _, err := q.topicV3(topic); err != nil {
		return nil, err
	}
	rs, err := q.u.adm.AlterTopicConfigs(q.ctx(), []kadm.AlterConfig{ac}, topic)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Err != nil {
			if r.ErrMessage != "" {
				re := kafkaErr(r.Err)
				return nil, &restError{status: re.status, code: re.code, msg: r.ErrMessage}
			}
			return nil, r.Err
		}
	}
	return noContent{}, nil
}

type partitionData struct {
	Kind         string   `json:"kind"`
	Metadata     v3Meta   `json:"metadata"`
	ClusterID    string   `json:"cluster_id"`
	TopicName    string   `json:"topic_name"`
	PartitionID  int32    `json:"partition_id"`
	Leader       *related `json:"leader"`
	Replicas     related  `json:"replicas"`
	Reassignment related  `json:"reassignment"`
}

func (q *v3req) partition(topic string, p kadm.PartitionDetail) partitionData {
	self := fmt.Sprintf("%s/topics/%s/partitions/%d", q.base, topic, p.Partition)
	pd := partitionData{Kind: "KafkaPartition", Metadata: meta(self, q.crn(fmt.Sprintf("/topic=%s/partition=%d", topic, p.Partition))),
		ClusterID: q.md.Cluster, TopicName: topic, PartitionID: p.Partition, Replicas: related{self + "/replicas"}, Reassignment: related{self + "/reassignment"}}
	if p.Leader >= 0 {
		pd.Leader = &related{fmt.Sprintf("%s/replicas/%d", self, p.Leader)}
	}
	return pd
}

func listPartitionsV3(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	td, err := q.topicV3(topic)
	if err != nil {
		return nil, err
	}
	out := []partitionData{}
	for _, p := range td.Partitions.Sorted() {
		out = append(out, q.partition(topic, p))
	}
	return newList("KafkaPartitionList", q.base+"/topics/"+topic+"/partitions", out), nil
}

func getPartitionV3(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	part, err := pathInt(q.r, "partition")
	if err != nil {
		return nil, err
	}
	td, err := q.topicV3(topic)
	if err != nil {
		return nil, err
	}
	p, ok := td.Partitions[part]
	if !ok {
		return nil, errf(404, 40402, "This server does not host this topic-partition.")
	}
	return q.partition(topic, p), nil
}

type groupData struct {
	Kind              string  `json:"kind"`
	Metadata          v3Meta  `json:"metadata"`
	ClusterID         string  `json:"cluster_id"`
	ConsumerGroupID   string  `json:"consumer_group_id"`
	IsSimple          bool    `json:"is_simple"`
	PartitionAssignor string  `json:"partition_assignor"`
	State             string  `json:"state"`
	Type              string  `json:"type"`
	IsMixed           bool    `json:"is_mixed_consumer_group"`
	Coordinator       related `json:"coordinator"`
	Consumers         related `json:"consumers"`
	LagSummary        related `json:"lag_summary"`
}

// groupState is a group's state as Confluent names it (the Java
// client's ConsumerGroupState / GroupState).
func groupState(s string) string {
	switch strings.ToLower(s) {
	case "stable":
		return "STABLE"
	case "empty":
		return "EMPTY"
	case "dead":
		return "DEAD"
	case "preparingrebalance":
		return "PREPARING_REBALANCE"
	case "completingrebalance":
		return "COMPLETING_REBALANCE"
	case "assigning":
		return "ASSIGNING"
	case "reconciling":
		return "RECONCILING"
	}
	return "UNKNOWN"
}

func (q *v3req) group(g kadm.DescribedGroup) groupData {
	self := q.base + "/consumer-groups/" + g.Group
	typ := "CLASSIC"
	if g.ProtocolType == "consumer" && g.Protocol == "" && len(g.Members) > 0 {
		typ = "CONSUMER"
	}
	return groupData{Kind: "KafkaConsumerGroup", Metadata: meta(self, q.crn("/consumer-group="+g.Group)), ClusterID: q.md.Cluster,
		ConsumerGroupID: g.Group, IsSimple: g.ProtocolType == "" && len(g.Members) == 0, PartitionAssignor: g.Protocol,
		State: groupState(g.State), Type: typ, Coordinator: related{fmt.Sprintf("%s/brokers/%d", q.base, g.Coordinator.NodeID)},
		Consumers: related{self + "/consumers"}, LagSummary: related{self + "/lag-summary"}}
}

func listGroups(q *v3req) (any, error) {
	listed, err := q.u.adm.ListGroups(q.ctx())
	if err != nil {
		return nil, err
	}
	names := listed.Groups()
	out := []groupData{}
	if len(names) > 0 {
		described, err := q.u.adm.DescribeGroups(q.ctx(), names...)
		if err != nil {
			return nil, err
		}
		for _, g := range described.Sorted() {
			if g.Err == nil {
				out = append(out, q.group(g))
			}
		}
	}
	return newList("KafkaConsumerGroupList", q.base+"/consumer-groups", out), nil
}

// describeGroup is one group; 404 for one the coordinator does not know.
func (q *v3req) describeGroup() (kadm.DescribedGroup, error) {
	name := q.r.PathValue("group")
	described, err := q.u.adm.DescribeGroups(q.ctx(), name)
	if err != nil {
		return kadm.DescribedGroup{}, err
	}
	g, ok := described[name]
	if !ok || g.State == "Dead" || errors.Is(g.Err, kerr.GroupIDNotFound) {
		return kadm.DescribedGroup{}, errf(404, 404, "Consumer Group %s could not be found.", name)
	}
	return g, g.Err
}

func getGroup(q *v3req) (any, error) {
	g, err := q.describeGroup()
	if err != nil {
		return nil, err
	}
	return q.group(g), nil
}

type consumerData struct {
	Kind            string  `json:"kind"`
	Metadata        v3Meta  `json:"metadata"`
	ClusterID       string  `json:"cluster_id"`
	ConsumerGroupID string  `json:"consumer_group_id"`
	ConsumerID      string  `json:"consumer_id"`
	InstanceID      *string `json:"instance_id"`
	ClientID        string  `json:"client_id"`
	Assignments     related `json:"assignments"`
}

func listGroupConsumers(q *v3req) (any, error) {
	g, err := q.describeGroup()
	if err != nil {
		return nil, err
	}
	self := q.base + "/consumer-groups/" + g.Group + "/consumers"
	out := []consumerData{}
	for _, m := range g.Members {
		ms := self + "/" + m.MemberID
		out = append(out, consumerData{Kind: "KafkaConsumer", Metadata: meta(ms, q.crn("/consumer-group="+g.Group+"/consumer="+m.MemberID)),
			ClusterID: q.md.Cluster, ConsumerGroupID: g.Group, ConsumerID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID,
			Assignments: related{ms + "/assignments"}})
	}
	slices.SortFunc(out, func(a, b consumerData) int { return strings.Compare(a.ConsumerID, b.ConsumerID) })
	return newList("KafkaConsumerList", self, out), nil
}

type lagData struct {
	Kind            string  `json:"kind"`
	Metadata        v3Meta  `json:"metadata"`
	ClusterID       string  `json:"cluster_id"`
	ConsumerGroupID string  `json:"consumer_group_id"`
	TopicName       string  `json:"topic_name"`
	PartitionID     int32   `json:"partition_id"`
	ConsumerID      string  `json:"consumer_id"`
	InstanceID      *string `json:"instance_id"`
	ClientID        string  `json:"client_id"`
	CurrentOffset   int64   `json:"current_offset"`
	LogEndOffset    int64   `json:"log_end_offset"`
	Lag             int64   `json:"lag"`
}

// lags are the group's committed offsets against the partitions' ends,
// each with the member it is assigned to ("" for none).
func (q *v3req) lags() ([]lagData, error) {
	g, err := q.describeGroup()
	if err != nil {
		return nil, err
	}
	committed, err := q.u.adm.FetchOffsets(q.ctx(), g.Group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, err
	}
	ends, err := q.u.adm.ListEndOffsets(q.ctx(), committed.Offsets().TopicsSet().Topics()...)
	if err != nil {
		return nil, err
	}
	lag := kadm.CalculateGroupLagWithStartOffsets(g, committed, nil, ends)
	out := []lagData{}
	for _, ml := range lag.Sorted() {
		if ml.Commit.At < 0 {
			continue
		}
		self := fmt.Sprintf("%s/consumer-groups/%s/lags/%s/partitions/%d", q.base, g.Group, ml.Topic, ml.Partition)
		ld := lagData{Kind: "KafkaConsumerLag", Metadata: meta(self, q.crn(fmt.Sprintf("/consumer-group=%s/lag=%s/partition=%d", g.Group, ml.Topic, ml.Partition))),
			ClusterID: q.md.Cluster, ConsumerGroupID: g.Group, TopicName: ml.Topic, PartitionID: ml.Partition,
			CurrentOffset: ml.Commit.At, LogEndOffset: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			ld.ConsumerID, ld.InstanceID, ld.ClientID = ml.Member.MemberID, ml.Member.InstanceID, ml.Member.ClientID
		}
		out = append(out, ld)
	}
	return out, nil
}

func listLags(q *v3req) (any, error) {
	ls, err := q.lags()
	if err != nil {
		return nil, err
	}
	return newList("KafkaConsumerLagList", q.base+"/consumer-groups/"+q.r.PathValue("group")+"/lags", ls), nil
}

func lagSummary(q *v3req) (any, error) {
	ls, err := q.lags()
	if err != nil {
		return nil, err
	}
	group := q.r.PathValue("group")
	self := q.base + "/consumer-groups/" + group + "/lag-summary"
	out := struct {
		Kind             string   `json:"kind"`
		Metadata         v3Meta   `json:"metadata"`
		ClusterID        string   `json:"cluster_id"`
		ConsumerGroupID  string   `json:"consumer_group_id"`
		MaxLagConsumerID string   `json:"max_lag_consumer_id"`
		MaxLagInstanceID *string  `json:"max_lag_instance_id"`
		MaxLagClientID   string   `json:"max_lag_client_id"`
		MaxLagTopicName  string   `json:"max_lag_topic_name"`
		MaxLagPartition  int32    `json:"max_lag_partition_id"`
		MaxLag           int64    `json:"max_lag"`
		TotalLag         int64    `json:"total_lag"`
		MaxLagConsumer   related  `json:"max_lag_consumer"`
		MaxLagPartitionR *related `json:"max_lag_partition"`
	}{Kind: "KafkaConsumerGroupLagSummary", Metadata: meta(self, q.crn("/consumer-group="+group+"/lag-summary")),
		ClusterID: q.md.Cluster, ConsumerGroupID: group}
	for i, l := range ls {
		out.TotalLag += l.Lag
		if i == 0 || l.Lag > out.MaxLag {
			out.MaxLag, out.MaxLagConsumerID, out.MaxLagInstanceID, out.MaxLagClientID = l.Lag, l.ConsumerID, l.InstanceID, l.ClientID
			out.MaxLagTopicName, out.MaxLagPartition = l.TopicName, l.PartitionID
		}
	}
	out.MaxLagConsumer = related{q.base + "/consumer-groups/" + group + "/consumers/" + out.MaxLagConsumerID}
	if len(ls) > 0 {
		out.MaxLagPartitionR = &related{fmt.Sprintf("%s/topics/%s/partitions/%d", q.base, out.MaxLagTopicName, out.MaxLagPartition)}
	}
	return out, nil
}

// v3 produce.

// produceV3Body is v3's ProduceRequest.
type produceV3Body struct {
	PartitionID *int32     `json:"partition_id"`
	Headers     []v3Header `json:"headers"`
	Key         *v3Data    `json:"key"`
	Value       *v3Data    `json:"value"`
	Timestamp   *time.Time `json:"timestamp"`
}

type v3Header struct {
	Name  string  `json:"name"`
	Value *string `json:"value"` // base64
}

type v3Data struct {
	Type     *string         `json:"type"`
	Data     json.RawMessage `json:"data"`
	SchemaID *int32          `json:"schema_id"`
	Schema   *string         `json:"schema"`
	Subject  *string         `json:"subject"`
	// SchemaVersion and Strategy (TOPIC_NAME, RECORD_NAME,
	// TOPIC_RECORD_NAME) name the schema with Subject.
	SchemaVersion *int32  `json:"schema_version"`
	Strategy      *string `json:"subject_name_strategy"`
}

type v3DataAnswer struct {
	Type          string `json:"type"`
	Size          int    `json:"size"`
	Subject       string `json:"subject,omitempty"`
	SchemaID      *int   `json:"schema_id,omitempty"`
	SchemaVersion *int   `json:"schema_version,omitempty"`
}

type produceV3Answer struct {
	ErrorCode   int           `json:"error_code,omitempty"`
	Message     string        `json:"message,omitempty"`
	ClusterID   string        `json:"cluster_id,omitempty"`
	TopicName   string        `json:"topic_name,omitempty"`
	PartitionID *int32        `json:"partition_id,omitempty"`
	Offset      *int64        `json:"offset,omitempty"`
	Timestamp   string        `json:"timestamp,omitempty"`
	Key         *v3DataAnswer `json:"key,omitempty"`
	Value       *v3DataAnswer `json:"value,omitempty"`
}

// v3Bytes serializes one key or value of a v3 record: BINARY (base64),
// JSON or STRING, or with a schema (v3_schemas.go); absent data is null.
func (s *v3Schemas) v3Bytes(d *v3Data, isKey bool) ([]byte, *v3DataAnswer, error) {
	if d == nil {
		return nil, nil, nil
	}
	if s.wantsSchema(d) {
		return s.encode(d, isKey)
	}
	typ := "BINARY"
	if d.Type != nil {
		typ = strings.ToUpper(*d.Type)
	}
	var b []byte
	switch typ {
	case "BINARY":
		if !isNull(d.Data) {
			var s string
			if err := json.Unmarshal(d.Data, &s); err != nil {
				return nil, nil, errf(400, 400, "BINARY data must be a base64 string")
			}
			var err error
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				return nil, nil, errf(400, 400, "BINARY data is not base64: %v", err)
			}
		}
	case "JSON":
		if !isNull(d.Data) {
			var err error
			if b, err = reencode(d.Data); err != nil {
				return nil, nil, errf(400, 400, "%v", err)
			}
		}
	case "STRING":
		if !isNull(d.Data) {
			var s string
			if err := json.Unmarshal(d.Data, &s); err != nil {
				return nil, nil, errf(400, 400, "STRING data must be a string")
			}
			b = []byte(s)
		}
	default:
		return nil, nil, errf(400, 400, "Unknown type %s", typ)
	}
	return b, &v3DataAnswer{Type: typ, Size: len(b)}, nil
}

// produceTarget is what a v3 produce learns of its topic before its
// records, as the Java producer of Confluent's proxy learns it from its
// metadata: the count of partitions (-1 while the producer has yet to
// learn them, a topic being created), or the failure every record
// answers.
type produceTarget struct {
	topic      string
	partitions int
	err        error
}

// produceTarget asks for the topic's metadata as the Java producer does,
// allowing auto creation: a broker creating topics on demand creates it.
// A topic the broker does not have fails every record with 40401, as
// the producer's wait for it fails ("not present in metadata"), and a
// topic the user may not describe with 40301.
func (q *v3req) produceTarget(topic string) (produceTarget, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(q.ctx(), q.u.admc)
	if err != nil {
		return produceTarget{}, err
	}
	t := produceTarget{topic: topic, partitions: -1, err: errTopicNotPresent(topic)}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(mt.ErrorCode); {
		case err == nil:
			t.partitions, t.err = len(mt.Partitions), nil
		case errors.Is(err, kerr.UnknownTopicOrPartition):
		case kerr.IsRetriable(err): // being created: the producer waits for its leaders
			t.err = nil
		default:
			t.err = err
		}
	}
	return t, nil
}

// check is the failure of a record for the partition it names
// (partition may be nil), before it is produced.
func (t produceTarget) check(partition *int32) error {
	if t.err != nil {
		return t.err
	}
	if partition != nil && t.partitions >= 0 && int(*partition) >= t.partitions {
		return errPartitionNotPresent(t.topic, *partition, t.partitions)
	}
	return nil
}

// recordErr is the failure of a record the producer failed.
func (t produceTarget) recordErr(rec *kgo.Record, err error) *restError {
	if np := namedPartitionIn(rec.Context); np != nil && np.count.Load() > 0 {
		return errPartitionNotPresent(t.topic, np.p, int(np.count.Load()))
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return errTopicNotPresent(t.topic)
	}
	return kafkaErr(err)
}

// errTopicNotPresent and errPartitionNotPresent are the failures of
// records for a topic or partition the cluster does not have: the Java
// producer's wait for them in its metadata fails ("... not present in
// metadata after max.block.ms"), which Confluent's proxy answers 40401.
func errTopicNotPresent(topic string) *restError {
	return errf(404, 40401, "Topic %s not present in metadata.", topic)
}

func errPartitionNotPresent(topic string, p int32, count int) *restError {
	return errf(404, 40401, "Partition %d of topic %s with partition count %d is not present in metadata.", p, topic, count)
}

// v3RecordAnswer is the answer of a record that failed: Confluent's
// code for the failure (its StreamingResponse maps a record's exception
// to the code of its body, not to the HTTP status), and the message.
func v3RecordAnswer(err error) produceV3Answer {
	re := kafkaErr(err)
	return produceV3Answer{ErrorCode: re.code, Message: re.msg}
}

// v3Prepare is a v3 produce entry's record, or its failure before it is
// produced, checked in the order of Confluent's ProduceAction: a
// negative partition, then the key and value, then the topic's.
func (s *v3Schemas) v3Prepare(t produceTarget, req *produceV3Body) (*kgo.Record, *v3DataAnswer, *v3DataAnswer, error) {
	if req.PartitionID != nil && *req.PartitionID < 0 {
		return nil, nil, nil, errPartitionNotFound
	}
	rec, keyAns, valAns, err := s.v3Record(req)
	if err == nil {
		err = t.check(req.PartitionID)
	}
	return rec, keyAns, valAns, err
}

// maxInFlight bounds the records of one streamed produce not yet
// answered.
const maxInFlight = 1000

// produceV3 produces each record of the request's stream of JSON objects
// and answers each, in order, as a stream of JSON objects, reading the
// next records while the first are produced.
func produceV3(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	if _, ok := requestFormat(q.r); !ok {
		return nil, errUnsupportedMedia
	}
	target, err := q.produceTarget(topic)
	if err != nil {
		return nil, err
	}
	schemas := &v3Schemas{p: q.p, r: q.r, topic: topic}
	rc := http.NewResponseController(q.w)
	rc.EnableFullDuplex() // answers go out while records come in
	type pending struct {
		done chan struct{}
		ans  produceV3Answer
	}
	queue := make(chan *pending, maxInFlight)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		enc := json.NewEncoder(q.w)
		enc.SetEscapeHTML(false)
		for p := range queue {
			<-p.done
			enc.Encode(p.ans)
			rc.Flush()
		}
	}()
	q.w.WriteHeader(http.StatusOK)
	dec := json.NewDecoder(q.r.Body)
	ctx, cancel := context.WithTimeout(q.ctx(), produceTimeout)
	defer cancel()
	for n := 0; ; n++ {
		var req produceV3Body
		err := dec.Decode(&req)
		if errors.Is(err, io.EOF) && n > 0 {
			break
		}
		p := &pending{done: make(chan struct{})}
		queue <- p
		if err != nil {
			msg := "Request body is empty. Data is required."
			if !errors.Is(err, io.EOF) {
				msg = "Error processing JSON: " + err.Error()
			}
			p.ans = produceV3Answer{ErrorCode: 400, Message: msg}
			close(p.done)
			break
		}
		rec, keyAns, valAns, rerr := schemas.v3Prepare(target, &req)
		if rerr != nil {
			p.ans = v3RecordAnswer(rerr)
			close(p.done)
			continue
		}
		q.u.kgo.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				p.ans = v3RecordAnswer(target.recordErr(r, err))
			} else {
				part, off := r.Partition, r.Offset
				p.ans = produceV3Answer{ErrorCode: 200, ClusterID: q.md.Cluster, TopicName: topic, PartitionID: &part, Offset: &off,
					Timestamp: r.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), Key: keyAns, Value: valAns}
			}
			close(p.done)
		})
	}
	close(queue)
	<-writerDone
	return handled{}, nil
}

// v3Record is the Kafka record of a v3 produce request's entry.
func (s *v3Schemas) v3Record(req *produceV3Body) (*kgo.Record, *v3DataAnswer, *v3DataAnswer, error) {
	rec := &kgo.Record{Topic: s.topic}
	var keyAns, valAns *v3DataAnswer
	var err error
	if rec.Key, keyAns, err = s.v3Bytes(req.Key, true); err != nil {
		return nil, nil, nil, err
	}
	if rec.Value, valAns, err = s.v3Bytes(req.Value, false); err != nil {
		return nil, nil, nil, err
	}
	for _, h := range req.Headers {
		kh := kgo.RecordHeader{Key: h.Name}
		if h.Value != nil {
			if kh.Value, err = base64.StdEncoding.DecodeString(*h.Value); err != nil {
				return nil, nil, nil, errf(400, 400, "header %s is not base64: %v", h.Name, err)
			}
		}
		rec.Headers = append(rec.Headers, kh)
	}
	if req.Timestamp != nil {
		rec.Timestamp = *req.Timestamp
	}
	if req.PartitionID != nil {
		rec.Context = withPartition(context.Background(), *req.PartitionID)
	}
	return rec, keyAns, valAns, nil
}

// maxBatchEntries is kafka-rest's produce.batch.maximum.entries default.
const maxBatchEntries = 10

// produceBatch serves records:batch: entries with ids, answered as
// successes and failures.
func produceBatch(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	var req struct {
		Entries []struct {
			ID json.RawMessage `json:"id"`
			produceV3Body
		} `json:"entries"`
	}
	if _, err := decodeBody(q.r, &req, false); err != nil {
		return nil, err
	}
	batchErr := func(msg string) error { return errf(400, 42208, "%s", msg) }
	switch {
	case len(req.Entries) == 0:
		return nil, batchErr("Empty batch.")
	case len(req.Entries) > maxBatchEntries:
		return nil, batchErr("Too many entries in batch.")
	}
	ids := make([]string, len(req.Entries))
	seen := map[string]bool{}
	for i, e := range req.Entries {
		if err := json.Unmarshal(e.ID, &ids[i]); err != nil || ids[i] == "" || len(ids[i]) > 80 {
			return nil, batchErr("Batch entry identifier is not a valid string.")
		}
		if seen[ids[i]] {
			return nil, batchErr("Batch entry IDs are not distinct.")
		}
		seen[ids[i]] = true
	}
	target, err := q.produceTarget(topic)
	if err != nil {
		return nil, err
	}
	type success struct {
		ID string `json:"id"`
		produceV3Answer
	}
	type failure struct {
		ID        string `json:"id"`
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	out := struct {
		Successes []success `json:"successes"`
		Failures  []failure `json:"failures"`
	}{[]success{}, []failure{}}
	fail := func(id string, err error) {
		a := v3RecordAnswer(err)
		out.Failures = append(out.Failures, failure{id, a.ErrorCode, a.Message})
	}
	schemas := &v3Schemas{p: q.p, r: q.r, topic: topic}
	var recs []*kgo.Record
	var recIDs []string
	answers := map[*kgo.Record][2]*v3DataAnswer{}
	for i := range req.Entries {
		e := &req.Entries[i]
		rec, keyAns, valAns, err := schemas.v3Prepare(target, &e.produceV3Body)
		if err != nil {
			fail(ids[i], err)
			continue
		}
		recs = append(recs, rec)
		recIDs = append(recIDs, ids[i])
		answers[rec] = [2]*v3DataAnswer{keyAns, valAns}
	}
	ctx, cancel := context.WithTimeout(q.ctx(), produceTimeout)
	defer cancel()
	for i, res := range produceInOrder(ctx, q.u.kgo, recs) {
		if res.Err != nil {
			fail(recIDs[i], target.recordErr(res.Record, res.Err))
			continue
		}
		part, off := res.Record.Partition, res.Record.Offset
		a := answers[res.Record]
		out.Successes = append(out.Successes, success{recIDs[i], produceV3Answer{ClusterID: q.md.Cluster, TopicName: topic, PartitionID: &part, Offset: &off,
			Timestamp: res.Record.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), Key: a[0], Value: a[1]}})
	}
	return out, nil
}
