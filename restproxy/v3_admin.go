package restproxy

// v3's administration resources (kafka-rest's AclsResource,
// BrokerConfigsResource, ListAllBrokersConfigsAction,
// ClusterConfigsResource, ReplicasResource, SearchReplicasByBrokerAction
// and the reassignment actions): ACLs searched, created and deleted; a
// broker's configs, every broker's at once, and the cluster-wide dynamic
// broker configs read, set and reset; a partition's replicas and
// a broker's; the ongoing reassignments.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (p *Proxy) v3AdminRoutes(add func(string, route)) {
	const c = "/v3/clusters/{cluster}"
	add(c+"/acls", route{"GET": p.v3(searchACLs), "POST": p.v3(createACL), "DELETE": p.v3(deleteACLs)})
	add(c+"/brokers/-/configs", route{"GET": p.v3(listAllBrokerConfigs)})
	add(c+"/brokers/{broker}/configs", route{"GET": p.v3(listBrokerConfigs)})
	add(c+"/brokers/{broker}/configs/{name}", route{"GET": p.v3(getBrokerConfig), "PUT": p.v3(setBrokerConfig), "DELETE": p.v3(resetBrokerConfig)})
	add(c+"/broker-configs", route{"GET": p.v3(listClusterConfigs)})
	add(c+"/broker-configs/{name}", route{"GET": p.v3(getClusterConfig), "PUT": p.v3(setClusterConfig), "DELETE": p.v3(resetClusterConfig)})
	add(c+"/brokers/{broker}/partition-replicas", route{"GET": p.v3(replicasOfBroker)})
	add(c+"/topics/{topic}/partitions/{partition}/replicas", route{"GET": p.v3(listReplicas)})
	add(c+"/topics/{topic}/partitions/{partition}/replicas/{broker}", route{"GET": p.v3(getReplica)})
	add(c+"/topics/-/partitions/-/reassignment", route{"GET": p.v3(listReassignments)})
	add(c+"/topics/{topic}/partitions/-/reassignment", route{"GET": p.v3(listReassignments)})
	add(c+"/topics/{topic}/partitions/{partition}/reassignment", route{"GET": p.v3(getReassignment)})
}

// javaQueryEscape escapes as Java's URLEncoder, which kafka-rest's URLs
// are built with: '*' left as is, '~' escaped.
func javaQueryEscape(s string) string {
	return strings.NewReplacer("%2A", "*", "~", "%7E").Replace(url.QueryEscape(s))
}

// ACLs.

type aclData struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Self string `json:"self"`
	} `json:"metadata"`
	ClusterID    string `json:"cluster_id"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// aclFilter is an ACL or a filter of ACLs, as kafka-rest's Acl enums
// name its parts (their order is Kafka's codes').
type aclFilter struct {
	resourceType          kmsg.ACLResourceType
	resourceName          *string
	patternType           kmsg.ACLResourcePatternType
	principal, host       *string
	operation             kmsg.ACLOperation
	permission            kmsg.ACLPermissionType
	typeName, patternName string
	opName, permName      string
}

// aclEnum parses one of kafka-rest's enum values, case aside: one of
// names (indexed by Kafka's code), "" for def.
func aclEnum(field, v, def string, names []string) (int8, string, error) {
	if v == "" {
		v = def
	}
	for i, n := range names {
		if strings.EqualFold(v, n) {
			return int8(i), n, nil
		}
	}
	return 0, "", errf(400, 400, "%s: %q is not one of %s", field, v, strings.Join(names[1:], ", "))
}

var (
	aclResourceTypes = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"}
	aclPatternTypes  = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	aclOperations    = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
	aclPermissions   = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

// parseACL reads an ACL's parts (get: query parameters or a body's
// fields), anyDefault naming "ANY" for those missing; it refuses
// UNKNOWN as kafka-rest does, and, for an ACL to create (exact), ANY
// and MATCH.
func parseACL(get func(string) string, anyDefault, exact bool) (aclFilter, error) {
	var f aclFilter
	def := ""
	if anyDefault {
		def = "ANY"
	}
	rt, rtName, err := aclEnum("resource_type", get("resource_type"), def, aclResourceTypes)
	if err != nil {
		return f, err
	}
	pt, ptName, err := aclEnum("pattern_type", get("pattern_type"), def, aclPatternTypes)
	if err != nil {
		return f, err
	}
	op, opName, err := aclEnum("operation", get("operation"), def, aclOperations)
	if err != nil {
		return f, err
	}
	perm, permName, err := aclEnum("permission", get("permission"), def, aclPermissions)
	if err != nil {
		return f, err
	}
	switch {
	case rt == 0 || exact && rt == 1:
		return f, errf(400, 400, "resource_type cannot be ANY")
	case pt == 0 && !exact:
		return f, errf(400, 400, "pattern_type cannot be UNKNOWN")
	case exact && pt <= 2:
		return f, errf(400, 400, "pattern_type cannot be %s", ptName)
	case op == 0 || exact && op == 1:
		return f, errf(400, 400, "operation cannot be ANY")
	case perm == 0 || exact && perm == 1:
		return f, errf(400, 400, "permission cannot be ANY")
	}
	f = aclFilter{resourceType: kmsg.ACLResourceType(rt), patternType: kmsg.ACLResourcePatternType(pt),
		operation: kmsg.ACLOperation(op), permission: kmsg.ACLPermissionType(perm),
		typeName: rtName, patternName: ptName, opName: opName, permName: permName}
	opt := func(s string) *string {
		if s == "" && !exact {
			return nil
		}
		return &s
	}
	f.resourceName, f.principal, f.host = opt(get("resource_name")), opt(get("principal")), opt(get("host"))
	return f, nil
}

// aclURL is kafka-rest's URL of the ACLs matching a filter's parts.
func (q *v3req) aclURL(rt, name, pt, principal, host, op, perm string) string {
	var b strings.Builder
	b.WriteString(q.base + "/acls")
	for i, kv := range [][2]string{{"resource_type", rt}, {"resource_name", name}, {"pattern_type", pt},
		{"principal", principal}, {"host", host}, {"operation", op}, {"permission", perm}} {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		b.WriteString(sep + kv[0] + "=" + javaQueryEscape(kv[1]))
	}
	return b.String()
}

func name(names []string, code int8) string {
	if code >= 0 && int(code) < len(names) {
		return names[code]
	}
	return "UNKNOWN"
}

type aclRow struct {
	codes [4]int8 // resource type, pattern type, operation, permission
	data  aclData
}

func (q *v3req) aclRow(rt kmsg.ACLResourceType, rname string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) aclRow {
	d := aclData{Kind: "KafkaAcl", ClusterID: q.md.Cluster, ResourceType: name(aclResourceTypes, int8(rt)), ResourceName: rname,
		PatternType: name(aclPatternTypes, int8(pt)), Principal: principal, Host: host, Operation: name(aclOperations, int8(op)),
		Permission: name(aclPermissions, int8(perm))}
	d.Metadata.Self = q.aclURL(d.ResourceType, rname, d.PatternType, principal, host, d.Operation, d.Permission)
	return aclRow{codes: [4]int8{int8(rt), int8(pt), int8(op), int8(perm)}, data: d}
}

func sortedACLs(rows []aclRow) []aclData {
	slices.SortFunc(rows, func(a, b aclRow) int {
		return cmp.Or(cmp.Compare(a.codes[0], b.codes[0]), strings.Compare(a.data.ResourceName, b.data.ResourceName),
			cmp.Compare(a.codes[1], b.codes[1]), strings.Compare(a.data.Principal, b.data.Principal),
			strings.Compare(a.data.Host, b.data.Host), cmp.Compare(a.codes[2], b.codes[2]), cmp.Compare(a.codes[3], b.codes[3]))
	})
	out := make([]aclData, len(rows))
	for i, r := range rows {
		out[i] = r.data
	}
	return out
}

// adminFailure is a Kafka error code of an admin answer (ACLs, configs)
// as the proxy's error.
func adminFailure(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	re := kafkaErr(err)
	if msg != nil && *msg != "" {
		return &restError{status: re.status, code: re.code, msg: *msg}
	}
	return re
}

func searchACLs(q *v3req) (any, error) {
	qs := q.r.URL.Query()
	f, err := parseACL(qs.Get, true, false)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = f.resourceType, f.resourceName, f.patternType
	req.Principal, req.Host, req.Operation, req.PermissionType = f.principal, f.host, f.operation, f.permission
	resp, err := req.RequestWith(q.ctx(), q.u.admc)
	if err != nil {
		return nil, err
	}
	if err := adminFailure(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	rows := []aclRow{}
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			rows = append(rows, q.aclRow(r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	l := newList("KafkaAclList", q.aclURL(f.typeName, qs.Get("resource_name"), f.patternName, qs.Get("principal"), qs.Get("host"), f.opName, f.permName), sortedACLs(rows))
	return l, nil
}

func createACL(q *v3req) (any, error) {
	var body map[string]string
	if _, err := decodeBody(q.r, &body, false); err != nil {
		return nil, err
	}
	f, err := parseACL(func(k string) string { return body[k] }, false, true)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = f.resourceType, *f.resourceName, f.patternType
	c.Principal, c.Host, c.Operation, c.PermissionType = *f.principal, *f.host, f.operation, f.permission
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(q.ctx(), q.u.admc)
	if err != nil {
		return nil, err
	}
	for _, r := range resp.Results {
		if err := adminFailure(r.ErrorCode, r.ErrorMessage); err != nil {
			return nil, err
		}
	}
	q.w.Header().Set("Location", q.aclURL(f.typeName, *f.resourceName, f.patternName, *f.principal, *f.host, f.opName, f.permName))
	q.w.WriteHeader(http.StatusCreated)
	return handled{}, nil
}

func deleteACLs(q *v3req) (any, error) {
	f, err := parseACL(q.r.URL.Query().Get, true, false)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourceName, df.ResourcePatternType = f.resourceType, f.resourceName, f.patternType
	df.Principal, df.Host, df.Operation, df.PermissionType = f.principal, f.host, f.operation, f.permission
	req.Filters = append(req.Filters, df)
	resp, err := req.RequestWith(q.ctx(), q.u.admc)
	if err != nil {
		return nil, err
	}
	rows := []aclRow{}
	for _, r := range resp.Results {
		if err := adminFailure(r.ErrorCode, r.ErrorMessage); err != nil {
			return nil, err
		}
		for _, m := range r.MatchingACLs {
			if m.ErrorCode == 0 {
				rows = append(rows, q.aclRow(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType))
			}
		}
	}
	return struct {
		Data []aclData `json:"data"`
	}{sortedACLs(rows)}, nil
}

// Broker configs: a broker's (BROKER resource named by its id) and the
// cluster's dynamic defaults (named "", kafka-rest's "cluster configs").

// describeBrokerConfigs describes the BROKER resources names in one
// request (the client sends each broker's to that broker), with
// synonyms: each resource's configs by name, sorted by name.
func (q *v3req) describeBrokerConfigs(names ...string) (map[string][]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	for _, name := range names {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(q.ctx(), q.u.admc)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]kmsg.DescribeConfigsResponseResourceConfig, len(names))
	for _, rr := range resp.Resources {
		if err := adminFailure(rr.ErrorCode, rr.ErrorMessage); err != nil {
			return nil, err
		}
		slices.SortFunc(rr.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
		out[rr.ResourceName] = rr.Configs
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return nil, errf(500, 50002, "DescribeConfigs answered no resource for broker %q", name)
		}
	}
	return out, nil
}

// brokerID is the path's broker, 404 unless the cluster has it.
func (q *v3req) brokerID() (int32, error) {
	id, err := pathInt(q.r, "broker")
	if err != nil {
		return 0, err
	}
	for _, b := range q.md.Brokers {
		if b.NodeID == id {
			return id, nil
		}
	}
	return 0, errf(404, 404, "Broker %d cannot be found.", id)
}

// resourceOf is the BROKER config resource of a broker (the cluster's
// for -1).
func resourceOf(broker int32) string {
	if broker < 0 {
		return ""
	}
	return strconv.Itoa(int(broker))
}

// configsOf are the configs of BROKER resources, in the order of
// brokers (each a broker's, or -1 the cluster's), each broker's sorted by
// name.
func (q *v3req) configsOf(brokers ...int32) ([]configData, error) {
	names := make([]string, len(brokers))
	for i, b := range brokers {
		names[i] = resourceOf(b)
	}
	described, err := q.describeBrokerConfigs(names...)
	if err != nil {
		return nil, err
	}
	out := []configData{}
	for i, broker := range brokers {
		for _, c := range described[names[i]] {
			out = append(out, q.brokerConfigData(broker, c))
		}
	}
	return out, nil
}

// brokerConfigData is a broker's config (KafkaBrokerConfig), or the
// cluster's for broker -1 (KafkaClusterConfig).
func (q *v3req) brokerConfigData(broker int32, c kmsg.DescribeConfigsResponseResourceConfig) configData {
	cd := configData{ClusterID: q.md.Cluster, Name: c.Name, Value: c.Value, IsDefault: c.Source == kmsg.ConfigSourceDefaultConfig,
		IsReadOnly: c.ReadOnly, IsSensitive: c.IsSensitive, Source: c.Source.String(), Synonyms: []synonym{}}
	if broker >= 0 {
		self := fmt.Sprintf("%s/brokers/%d/configs/%s", q.base, broker, c.Name)
		cd.Kind, cd.Metadata, cd.BrokerID = "KafkaBrokerConfig", meta(self, q.crn(fmt.Sprintf("/broker=%d/config=%s", broker, c.Name))), &broker
	} else {
		self := q.base + "/broker-configs/" + c.Name
		cd.Kind, cd.Metadata, cd.ConfigType = "KafkaClusterConfig", meta(self, q.crn("/broker-config="+c.Name)), "BROKER"
	}
	for _, s := range c.ConfigSynonyms {
		cd.Synonyms = append(cd.Synonyms, synonym{Name: s.Name, Value: s.Value, Source: s.Source.String()})
	}
	return cd
}

// brokerOfPath is the path's broker, or -1 for the cluster's configs.
func (q *v3req) brokerOfPath() (int32, error) {
	if q.r.PathValue("broker") == "" {
		return -1, nil
	}
	return q.brokerID()
}

func listBrokerConfigs(q *v3req) (any, error) {
	b, err := q.brokerID()
	if err != nil {
		return nil, err
	}
	cs, err := q.configsOf(b)
	if err != nil {
		return nil, err
	}
	return newList("KafkaBrokerConfigList", fmt.Sprintf("%s/brokers/%d/configs", q.base, b), cs), nil
}

// listAllBrokerConfigs is kafka-rest's ListAllBrokersConfigsAction
// (GET brokers/-/configs): every broker's configs, as each broker's list
// gives them, brokers in order of id.
func listAllBrokerConfigs(q *v3req) (any, error) {
	ids := make([]int32, 0, len(q.md.Brokers))
	for _, b := range q.md.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	cs, err := q.configsOf(ids...)
	if err != nil {
		return nil, err
	}
	return newList("KafkaBrokerConfigList", q.base+"/brokers/-/configs", cs), nil
}

func listClusterConfigs(q *v3req) (any, error) {
	cs, err := q.configsOf(-1)
	if err != nil {
		return nil, err
	}
	return newList("KafkaClusterConfigList", q.base+"/broker-configs", cs), nil
}

// brokerConfig is the path's config of the path's broker (or of the
// cluster), nil when it has none by that name.
func (q *v3req) brokerConfig() (*configData, int32, error) {
	b, err := q.brokerOfPath()
	if err != nil {
		return nil, 0, err
	}
	cs, err := q.configsOf(b)
	if err != nil {
		return nil, 0, err
	}
	name := q.r.PathValue("name")
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i], b, nil
		}
	}
	return nil, b, nil
}

func getBrokerConfig(q *v3req) (any, error) {
	c, _, err := q.brokerConfig()
	if err == nil && c == nil {
		err = errNotFound
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

var (
	setBrokerConfig, resetBrokerConfig = configSetters((*v3req).alterBrokerConfig)
	// The cluster's configs are the broker configs of no broker.
	getClusterConfig, setClusterConfig, resetClusterConfig = getBrokerConfig, setBrokerConfig, resetBrokerConfig
)

// alterBrokerConfig alters one config of the path's broker (or of the
// cluster); kafka-rest checks that the config exists first, but for a
// cluster config it sets (there, only dynamic ones are listed).
func (q *v3req) alterBrokerConfig(ac kadm.AlterConfig) (any, error) {
	c, b, err := q.brokerConfig()
	if err != nil {
		return nil, err
	}
	if c == nil && (b >= 0 || ac.Op == kadm.DeleteConfig) {
		return nil, errf(404, 404, "Config %s cannot be found for BROKER %s in cluster %s.", ac.Name, resourceOf(b), q.md.Cluster)
	}
	var brokers []int32
	if b >= 0 {
		brokers = []int32{b}
	}
	rs, err := q.u.adm.AlterBrokerConfigs(q.ctx(), []kadm.AlterConfig{ac}, brokers...)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Err != nil {
			msg := &r.ErrMessage
			return nil, adminFailure(kerrCode(r.Err), msg)
		}
	}
	return noContent{}, nil
}

// kerrCode is a Kafka error's code.
func kerrCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// Replicas.

type replicaData struct {
	Kind        string  `json:"kind"`
	Metadata    v3Meta  `json:"metadata"`
	ClusterID   string  `json:"cluster_id"`
	TopicName   string  `json:"topic_name"`
	PartitionID int32   `json:"partition_id"`
	BrokerID    int32   `json:"broker_id"`
	IsLeader    bool    `json:"is_leader"`
	IsInSync    bool    `json:"is_in_sync"`
	Broker      related `json:"broker"`
}

// replicas are a partition's, in its assignment's order.
func (q *v3req) replicas(topic string, p kadm.PartitionDetail) []replicaData {
	out := []replicaData{}
	for _, b := range p.Replicas {
		self := fmt.Sprintf("%s/topics/%s/partitions/%d/replicas/%d", q.base, topic, p.Partition, b)
		out = append(out, replicaData{Kind: "KafkaReplica", Metadata: meta(self, q.crn(fmt.Sprintf("/topic=%s/partition=%d/replica=%d", topic, p.Partition, b))),
			ClusterID: q.md.Cluster, TopicName: topic, PartitionID: p.Partition, BrokerID: b, IsLeader: b == p.Leader,
			IsInSync: slices.Contains(p.ISR, b), Broker: related{fmt.Sprintf("%s/brokers/%d", q.base, b)}})
	}
	return out
}

// pathPartition is the path's partition, 404 as kafka-rest's
// ReplicaManager answers for a topic or partition the cluster has not.
func (q *v3req) pathPartition() (string, kadm.PartitionDetail, error) {
	topic := q.r.PathValue("topic")
	part, err := pathInt(q.r, "partition")
	if err != nil {
		return "", kadm.PartitionDetail{}, err
	}
	td, err := q.topicV3(topic)
	if err != nil {
		return "", kadm.PartitionDetail{}, err
	}
	p, ok := td.Partitions[part]
	if !ok {
		return "", p, errf(404, 404, "Partition %d of topic %s could not be found on cluster %s.", part, topic, q.md.Cluster)
	}
	return topic, p, nil
}

func listReplicas(q *v3req) (any, error) {
	topic, p, err := q.pathPartition()
	if err != nil {
		return nil, err
	}
	return newList("KafkaReplicaList", fmt.Sprintf("%s/topics/%s/partitions/%d/replicas", q.base, topic, p.Partition), q.replicas(topic, p)), nil
}

func getReplica(q *v3req) (any, error) {
	topic, p, err := q.pathPartition()
	if err != nil {
		return nil, err
	}
	b, err := pathInt(q.r, "broker")
	if err != nil {
		return nil, err
	}
	for _, r := range q.replicas(topic, p) {
		if r.BrokerID == b {
			return r, nil
		}
	}
	return nil, errNotFound
}

// replicasOfBroker are the replicas a broker's log directories hold, by
// topic and partition (kafka-rest's SearchReplicasByBrokerAction).
func replicasOfBroker(q *v3req) (any, error) {
	b, err := q.brokerID()
	if err != nil {
		return nil, err
	}
	dirs, err := q.u.adm.DescribeBrokerLogDirs(q.ctx(), b, nil)
	if err != nil {
		return nil, err
	}
	held := map[string]map[int32]bool{}
	for _, d := range dirs {
		if d.Err != nil {
			return nil, d.Err
		}
		for t, ps := range d.Topics {
			for p := range ps {
				if held[t] == nil {
					held[t] = map[int32]bool{}
				}
				held[t][p] = true
			}
		}
	}
	out := []replicaData{}
	if len(held) > 0 {
		md, err := q.u.adm.Metadata(q.ctx(), slices.Collect(maps.Keys(held))...)
		if err != nil {
			return nil, err
		}
		for _, td := range md.Topics.Sorted() {
			for _, p := range td.Partitions.Sorted() {
				if !held[td.Topic][p.Partition] {
					continue
				}
				for _, r := range q.replicas(td.Topic, p) {
					if r.BrokerID == b {
						out = append(out, r)
					}
				}
			}
		}
	}
	return newList("KafkaReplicaList", fmt.Sprintf("%s/brokers/%d/partition-replicas", q.base, b), out), nil
}

// Reassignments.

type reassignmentData struct {
	Kind             string  `json:"kind"`
	Metadata         v3Meta  `json:"metadata"`
	ClusterID        string  `json:"cluster_id"`
	TopicName        string  `json:"topic_name"`
	PartitionID      int32   `json:"partition_id"`
	AddingReplicas   []int32 `json:"adding_replicas"`
	RemovingReplicas []int32 `json:"removing_replicas"`
	Replicas         related `json:"replicas"`
}

// reassignments are the ongoing ones, of one topic when topic is not "",
// by topic and partition; kafka-rest names each .../reassignments in a
// list and .../reassignment alone (suffix).
func (q *v3req) reassignments(topic, suffix string) ([]reassignmentData, error) {
	rs, err := q.u.adm.ListPartitionReassignments(q.ctx(), nil)
	if err != nil {
		return nil, err
	}
	out := []reassignmentData{}
	for _, r := range rs.Sorted() {
		if topic != "" && r.Topic != topic {
			continue
		}
		base := fmt.Sprintf("%s/topics/%s/partitions/%d", q.base, r.Topic, r.Partition)
		out = append(out, reassignmentData{Kind: "KafkaReassignment", Metadata: meta(base+"/"+suffix, q.crn(fmt.Sprintf("/topic=%s/partition=%d/%s", r.Topic, r.Partition, suffix))),
			ClusterID: q.md.Cluster, TopicName: r.Topic, PartitionID: r.Partition, AddingReplicas: nonNil(r.AddingReplicas),
			RemovingReplicas: nonNil(r.RemovingReplicas), Replicas: related{base + "/replicas"}})
	}
	return out, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func listReassignments(q *v3req) (any, error) {
	topic, self := q.r.PathValue("topic"), q.base+"/topics/-/partitions/-/reassignments"
	if topic != "" {
		self = q.base + "/topics/" + topic + "/partitions/-/reassignments"
	}
	rs, err := q.reassignments(topic, "reassignments")
	if err != nil {
		return nil, err
	}
	return newList("KafkaReassignmentList", self, rs), nil
}

func getReassignment(q *v3req) (any, error) {
	part, err := pathInt(q.r, "partition")
	if err != nil {
		return nil, err
	}
	rs, err := q.reassignments(q.r.PathValue("topic"), "reassignment")
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.PartitionID == part {
			return r, nil
		}
	}
	return nil, errNotFound
}
