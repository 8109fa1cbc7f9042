package broker

// Metadata v0-v13. v0: an empty topic list means all topics (v1+: null).
// v1: controller id, internal flag. v2: cluster id. v4: allow auto topic
// creation (older versions by auto.create.topics.enable alone); the
// request that creates a topic gets LEADER_NOT_AVAILABLE and no partitions
// for it, as from Kafka. v5: offline replicas. v7:
// leader epochs. v8-10: authorized operations. v9: flexible. v10: topic ids.
// v12: lookup by topic id. v13: top-level error code.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleMetadata(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return nil, err
	}
	for _, bi := range brokers {
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID = bi.ID
		rb.Host, rb.Port = endpointFor(bi, r.listener)
		if bi.Rack != "" {
			rb.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.ClusterID = &b.clusterID
	resp.ControllerID = b.controllerID(brokers)
	if req.IncludeClusterAuthorizedOperations { // v8-v10
		resp.AuthorizedOperations = b.clusterOps(r)
	}
	defer func() {
		if req.IncludeTopicAuthorizedOperations {
			for i := range resp.Topics {
				if resp.Topics[i].ErrorCode == 0 {
					resp.Topics[i].AuthorizedOperations = b.topicOps(r, resp.Topics[i].Topic)
				}
			}
		}
	}()

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range b.meta.topicList() {
			if b.allowed(r, security.OpDescribe, security.ResourceTopic, t.name) { // authz.go
				resp.Topics = append(resp.Topics, b.metadataTopic(t))
			}
		}
		return resp, nil
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, rt := range req.Topics {
		var t *topic
		switch {
		case rt.Topic != nil:
			t = b.meta.topic(*rt.Topic)
		case rt.TopicID != [16]byte{}:
			t = b.meta.topicByID(rt.TopicID)
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if mt, refused := b.metadataRefusal(r, rt.Topic, t, allowCreate); refused { // authz.go
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			name := ""
			if rt.Topic != nil {
				name = *rt.Topic
			}
			switch {
			case validateTopicName(name) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			case b.autoCreate && allowCreate && !isInternalTopic(name):
				// As Kafka answers the request that starts the creation:
				// the topic, LEADER_NOT_AVAILABLE and no partitions; they
				// appear in a later answer (clients retry this error).
				err := b.createTopic(ctx, &topicSpec{name: name, partitions: -1, replication: -1}, false)
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
				if code := errCode(err); err != nil && code != kerr.TopicAlreadyExists.Code {
					mt.ErrorCode = code
				}
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(t))
	}
	return resp, nil
}

// With no authorizer (samsa has none yet) Kafka reports every operation a
// resource supports as allowed, as a bit field of AclOperation codes
// (1<<code); authorized_operations stays INT32_MIN ("not provided") when
// the request does not ask for it.
var (
	// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
	topicAuthorizedOps = aclOps(kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs)
	// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
	clusterAuthorizedOps = aclOps(kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
		kmsg.ACLOperationIdempotentWrite)
)

func aclOps(ops ...kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}

// endpointFor is the advertised address of broker bi on the named listener,
// so that a client reaches every broker through the listener it came in on
// (the docker-compose INTERNAL/EXTERNAL split); the first endpoint
// otherwise.
func endpointFor(bi controller.BrokerInfo, listener string) (string, int32) {
	for _, e := range bi.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port
		}
	}
	return bi.Host, bi.Port
}

// controllerCache keeps the elected controller's id for a second.
type controllerCache struct {
	mu  sync.Mutex
	id  int32
	age time.Time
}

// controllerID is the broker elected controller (ElectLeaders goes there),
// re-read from etcd at most once a second; while none is known, the lowest
// live id. Any broker serves the other admin requests, as they all write
// to etcd.
func (b *Broker) controllerID(brokers []controller.BrokerInfo) int32 {
	if b.store != nil && b.store.IsController() {
		return b.nodeID
	}
	c := &b.ctrlID
	c.mu.Lock()
	id, fresh := c.id, time.Since(c.age) < time.Second
	c.mu.Unlock()
	if !fresh {
		cctx, cancel := context.WithTimeout(b.ctx, time.Second)
		got, err := b.store.Controller(cctx)
		cancel()
		if err == nil {
			id = got
			c.mu.Lock()
			c.id, c.age = got, time.Now()
			c.mu.Unlock()
		} else if !errors.Is(err, controller.ErrNoController) {
			fresh = c.age != time.Time{}
		}
		if !fresh && err != nil {
			id = -1
		}
	}
	if id >= 0 {
		for _, bi := range brokers {
			if bi.ID == id {
				return id
			}
		}
	}
	if len(brokers) == 0 {
		return b.nodeID
	}
	return brokers[0].ID
}

func (b *Broker) metadataTopic(t *topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = isInternalTopic(t.name)
	live, offline := b.liveSet(), b.offlineReplicas()
	for _, p := range t.parts {
		leader, epoch, replicas, isr := p.State()
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.ID
		mp.Leader = leader
		mp.LeaderEpoch = epoch
		mp.Replicas = slices.Clone(replicas)
		mp.ISR = slices.Clone(isr)
		mp.OfflineReplicas = []int32{}
		for _, r := range replicas {
			if live != nil && !live[r] || slices.Contains(offline[controller.TopicPartition{Topic: t.name, Partition: p.ID}], r) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// offlineReplicas are the brokers whose replica of each partition is
// offline (a failed log directory), as last read; nil when none.
func (b *Broker) offlineReplicas() map[controller.TopicPartition][]int32 {
	m := &b.meta
	m.brokersMu.Lock()
	defer m.brokersMu.Unlock()
	return controller.OfflineReplicas(m.brokers)
}

// liveSet is the set of registered broker ids as last read (nil when
// unknown).
func (b *Broker) liveSet() map[int32]bool {
	m := &b.meta
	m.brokersMu.Lock()
	defer m.brokersMu.Unlock()
	if m.brokers == nil {
		return nil
	}
	live := make(map[int32]bool, len(m.brokers))
	for _, bi := range m.brokers {
		live[bi.ID] = true
	}
	return live
}

// isInternalTopic: the topics only the broker writes, Kafka's
// Topic.INTERNAL_TOPICS.
func isInternalTopic(name string) bool {
	return name == offsetsTopic || name == txnTopic || name == shareStateTopic
}
