package restproxy

// v3 (kafka-rest's resources/v3): clusters, brokers, topics with their
// configs and partitions, consumer groups with their lag; produce is in
// v3_produce.go.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
