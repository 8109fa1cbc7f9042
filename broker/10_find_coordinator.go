package broker

// FindCoordinator v0-v6: the coordinator of a group is the leader of its
// __consumer_offsets partition, abs(javaHash(group)) % partitions, which is
// created on first use: as Kafka 4.4 does, the request that finds the topic
// missing starts its creation in the background and it and every request
// until the topic is here get COORDINATOR_NOT_AVAILABLE (clients retry).
// v4+ asks for several keys at once. Key type 1: the coordinator of a
// transactional id is the leader of its __transaction_state partition,
// created on first use likewise. Key type
// 2 (v6, KIP-932): the share coordinator of a share-partition, keyed
// "group:topicId:partition", is the leader of its __share_group_state
// partition (84_share_group_state.go); it needs ClusterAction, as Kafka's
// share-partition leaders are the ones that ask.

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

func (b *Broker) handleFindCoordinator(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		c := b.findCoordinator(ctx, r, req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, b.findCoordinator(ctx, r, req.CoordinatorType, key))
	}
	return resp, nil
}

func (b *Broker) findCoordinator(ctx context.Context, r *request, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = err.Code
		c.ErrorMessage = kmsg.StringPtr(msg)
		return c
	}
	// COORDINATOR_NOT_AVAILABLE as Kafka answers it: with the error's
	// message before v4, with an empty one in v4's answers per key.
	notAvailable := func() kmsg.FindCoordinatorResponseCoordinator {
		msg := ""
		if r.hdr.Version < 4 {
			msg = coordinatorNotAvailable
		}
		return fail(kerr.CoordinatorNotAvailable, msg)
	}
	var p *partition
	switch keyType {
	case 0: // group
		if !b.coordinatorTopic(offsetsTopic, b.ensureOffsetsTopic) {
			return notAvailable()
		}
		p = b.meta.partition(offsetsTopic, b.groups.PartitionFor(key))
	case 1: // transaction
		if key == "" {
			return fail(kerr.InvalidRequest, "the transactional id is empty")
		}
		if !b.coordinatorTopic(txnTopic, b.ensureTxnTopic) {
			return notAvailable()
		}
		p = b.meta.partition(txnTopic, b.txn.PartitionFor(key))
	case 2: // share-partition state; Kafka 4.4 answers it with empty messages
		c.ErrorMessage = kmsg.StringPtr("")
		if r.hdr.Version < 6 {
			return fail(kerr.InvalidRequest, "")
		}
		if err := b.clusterRefusal(r, security.OpClusterAction); err != nil {
			return fail(kerr.ClusterAuthorizationFailed, "")
		}
		k, ok := parseSharePartitionKey(key)
		if !ok {
			return fail(kerr.InvalidRequest, "")
		}
		if !b.coordinatorTopic(shareStateTopic, b.ensureShareStateTopic) {
			return notAvailable()
		}
		p = b.meta.partition(shareStateTopic, b.shareSt.partitionFor(k))
	default:
		return fail(kerr.InvalidRequest, "unsupported coordinator key type")
	}
	if p == nil {
		return fail(kerr.CoordinatorNotAvailable, "no coordinator partition for the key")
	}
	leader, _, _, _ := p.State()
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable, err.Error())
	}
	for _, bi := range brokers {
		if bi.ID == leader {
			c.NodeID = bi.ID
			c.Host, c.Port = endpointFor(bi, r.listener)
			return c
		}
	}
	return notAvailable()
}

// coordinatorNotAvailable is Kafka's message for COORDINATOR_NOT_AVAILABLE.
const coordinatorNotAvailable = "The coordinator is not available."

// internalCreates are the internal topics FindCoordinator started creating
// and whose creation has not ended: however many requests find a topic
// missing at once, one creation runs, as Kafka's AutoTopicCreationManager
// keeps one in flight per topic.
type internalCreates struct {
	mu       sync.Mutex
	inflight map[string]bool // guarded by mu
}

// coordinatorTopic reports whether internal topic name is in the metadata
// cache. When it is not, it starts ensure (the topic's creation) in the
// background unless that already runs, and reports false: Kafka's
// FindCoordinator answers COORDINATOR_NOT_AVAILABLE while it creates the
// topic, and names a coordinator only once its metadata has the topic and
// the partition a leader. Creating it within the request instead answered
// the first request with a coordinator and requests arriving meanwhile
// with COORDINATOR_NOT_AVAILABLE ("topic exists").
func (b *Broker) coordinatorTopic(name string, ensure func(context.Context) error) bool {
	if b.meta.topic(name) != nil {
		return true
	}
	c := &b.internalCreates
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight[name] {
		return false
	}
	done := func() {
		c.mu.Lock()
		delete(c.inflight, name)
		c.mu.Unlock()
	}
	if !b.spawn(func(ctx context.Context) {
		defer done()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := ensure(cctx)
		if err != nil && ctx.Err() == nil {
			b.log.Warn("creating internal topic", "topic", name, "err", err)
		}
	}) {
		return false
	}
	if c.inflight == nil {
		c.inflight = map[string]bool{}
	}
	c.inflight[name] = true
	return false
}

// parseSharePartitionKey reads a share coordinator key as Kafka's
// SharePartitionKey.getInstance does: the group (which may hold ':',
// trimmed, not empty), the topic id in base64url and the partition, after
// the last two ':'.
func parseSharePartitionKey(key string) (share.Key, bool) {
	parts := strings.Split(key, ":")
	if len(parts) < 3 {
		return share.Key{}, false
	}
	var k share.Key
	k.Group = strings.TrimSpace(strings.Join(parts[:len(parts)-2], ":"))
	id, err := base64.RawURLEncoding.DecodeString(parts[len(parts)-2])
	p, perr := strconv.ParseInt(parts[len(parts)-1], 10, 32)
	if k.Group == "" || err != nil || len(id) != len(k.TopicID) || perr != nil {
		return share.Key{}, false
	}
	k.Partition = int32(p)
	copy(k.TopicID[:], id)
	return k, true
}
