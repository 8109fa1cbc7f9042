package broker

// CreateTopics v2-v7. v4: -1 partitions / replication factor take the broker
// defaults (KIP-464). v5: flexible; the response carries the topic's
// partition count, replication factor and configs. v7: topic ids. A
// timeout of 0 or less times every topic out unchecked (REQUEST_TIMED_OUT,
// no message), as Kafka 4.4's controller, after authorization and the
// duplicate check.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
)

func (b *Broker) handleCreateTopics(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := countNames(req.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic })
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, replication: rt.ReplicationFactor, configs: map[string]string{}}
		var err error
		if !b.mayCreateTopic(r, rt.Topic) { // authz.go
			err = kerr.TopicAuthorizationFailed
		} else if seen[rt.Topic] > 1 {
			err = kerr.InvalidRequest
			st.ErrorMessage = kmsg.StringPtr("duplicate topic in request: " + rt.Topic)
		} else if req.TimeoutMillis <= 0 {
			// Kafka's controller: the deadline (now plus the timeout)
			// has passed, nothing is checked or created.
			st.ErrorCode = kerr.RequestTimedOut.Code
			st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		for _, c := range rt.Configs {
			if c.Value == nil {
				err = errors.Join(err, fmt.Errorf("%w: null value for %s", config.ErrInvalidConfig, c.Name))
				continue
			}
			spec.configs[c.Name] = *c.Value
		}
		if len(rt.ReplicaAssignment) > 0 {
			if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
				err = kerr.InvalidRequest
				st.ErrorMessage = kmsg.StringPtr("both numPartitions or replicationFactor and replicasAssignments were set")
			}
			spec.assignment = make([][]int32, len(rt.ReplicaAssignment))
			for _, a := range rt.ReplicaAssignment {
				if a.Partition < 0 || int(a.Partition) >= len(rt.ReplicaAssignment) || spec.assignment[a.Partition] != nil {
					err = kerr.InvalidReplicaAssignment
					st.ErrorMessage = kmsg.StringPtr("partitions in the assignment must be consecutive from 0")
					break
				}
				spec.assignment[a.Partition] = a.Replicas
			}
		}
		if err == nil && !req.ValidateOnly && b.meta.topic(rt.Topic) == nil {
			err = b.mutationQuota(r, spec.newPartitions(b.numPartitions), 6) // 48_client_quotas.go
		}
		if err == nil {
			err = b.createTopic(ctx, &spec, req.ValidateOnly)
		}
		st.ErrorCode = errCode(err)
		if err != nil && st.ErrorMessage == nil {
			st.ErrorMessage = errMsg(err)
		}
		if err == nil {
			overrides := spec.configs
			if t := b.meta.topic(rt.Topic); t != nil && !req.ValidateOnly {
				st.TopicID, overrides = t.id, t.configs
			}
			st.NumPartitions, st.ReplicationFactor = spec.partitions, spec.replication
			for _, e := range b.cfg().DescribeTopic(overrides, false, false) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Source, e.Sensitive
				st.Configs = append(st.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.ThrottleMillis = r.throttleMillis()
	return resp, nil
}

// countNames counts how often each name occurs in items: a topic named
// twice in one admin request is INVALID_REQUEST for both, as in Kafka.
func countNames[T any](items []T, name func(T) string) map[string]int {
	n := make(map[string]int, len(items))
	for _, it := range items {
		n[name(it)]++
	}
	return n
}

// maxPartitionsPerRequest bounds the partitions one CreateTopics or
// CreatePartitions request may add, as Kafka's controller bounds the
// records of one operation (10000: a partition is one record whatever its
// replication factor, which the live brokers bound), so that no request
// can make the broker allocate or open without limit.
const maxPartitionsPerRequest = 10000

// topicSpec is a topic to create. partitions and replication of -1 take the
// broker defaults; assignment, when set, gives the replicas of each partition.
type topicSpec struct {
	name        string
	partitions  int32
	replication int16
	assignment  [][]int32
	configs     map[string]string
}

// newPartitions is how many partitions the spec creates (num.partitions
// for -1), what controller_mutation_rate counts.
func (s *topicSpec) newPartitions(defaultPartitions int32) int {
	switch {
	case s.assignment != nil:
		return len(s.assignment)
	case s.partitions == -1:
		return int(defaultPartitions)
	}
	return int(max(s.partitions, 0))
}

// validateTopicName applies Kafka's rules for topic names.
func validateTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return kerr.InvalidTopicException
	}
	if len(name) > 249 {
		return kerr.InvalidTopicException
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return kerr.InvalidTopicException
		}
	}
	return nil
}

// createTopic validates spec, writes the topic to etcd (unless validateOnly)
// and waits until this broker's cache and logs have it. spec's partitions
// and replication are filled in from the defaults.
func (b *Broker) createTopic(ctx context.Context, spec *topicSpec, validateOnly bool) error {
	if err := validateTopicName(spec.name); err != nil {
		return err
	}
	if err := b.cfg().ValidateTopicChange(nil, spec.configs); err != nil {
		return err
	}
	need := hasBrokers(0, spec.assignment...)
	if spec.assignment == nil {
		rf := int(spec.replication)
		if rf == -1 {
			rf = int(b.defaultRF)
		}
		need = hasBrokers(rf)
	}
	brokers, err := b.brokersFor(ctx, need)
	if err != nil {
		return err
	}
	ids := make([]int32, len(brokers))
	for i, bi := range brokers {
		ids[i] = bi.ID
	}
	if spec.assignment != nil {
		if err := validateAssignment(spec.assignment, ids, -1); err != nil {
			return err
		}
		if err := cordonRefusal(brokers, spec.assignment...); err != nil {
			return err
		}
	} else {
		if spec.partitions == -1 {
			spec.partitions = b.numPartitions
		}
		if spec.replication == -1 {
			spec.replication = b.defaultRF
		}
		if spec.partitions <= 0 {
			return fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
		}
		if spec.partitions > maxPartitionsPerRequest {
			return fmt.Errorf("%w: %d partitions in one request, at most %d", kerr.PolicyViolation, spec.partitions, maxPartitionsPerRequest)
		}
		if spec.replication <= 0 {
			return fmt.Errorf("%w: replication factor must be larger than 0", kerr.InvalidReplicationFactor)
		}
		usable := uncordoned(brokers)
		if err := placementRefusal(int(spec.replication), len(usable), true); err != nil {
			return err
		}
		if spec.assignment, err = placeReplicas(usable, int(spec.partitions), int(spec.replication), mrand.IntN(len(usable))); err != nil {
			return err
		}
	}
	if n := len(spec.assignment); n > maxPartitionsPerRequest {
		// Kafka's controller refuses such batches (MAX_RECORDS_PER_USER_OP).
		return fmt.Errorf("%w: %d partitions in one request, at most %d", kerr.PolicyViolation, n, maxPartitionsPerRequest)
	}
	spec.partitions, spec.replication = int32(len(spec.assignment)), int16(len(spec.assignment[0]))
	if b.meta.topic(spec.name) != nil {
		return topicExists(spec.name)
	}
	if validateOnly {
		return nil
	}
	if h := b.createTopicHook.Load(); h != nil {
		(*h)(spec.name)
	}
	var id [16]byte
	rand.Read(id[:])
	if err := b.store.CreateTopic(ctx, spec.name, id, spec.assignment, spec.configs); err != nil {
		if errors.Is(err, controller.ErrTopicExists) {
			// Made meanwhile by another broker or request: the same
			// answer as when this broker's metadata has it already.
			return topicExists(spec.name)
		}
		return err
	}
	return b.awaitTopic(ctx, spec.name, len(spec.assignment))
}

// topicExists is TOPIC_ALREADY_EXISTS with Kafka's message.
func topicExists(name string) error {
	return &codedError{kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", name)}
}

// internalTopic is a topic the broker creates on first use: a
// coordinator's, the schema registry's.
type internalTopic struct {
	name       string
	partitions int32
	rf         int                            // wanted; capped by the live brokers
	configs    func(rf int) map[string]string // its configs at replication factor rf
	sync       func()                         // called once it exists here
}

// ensureInternalTopic creates t unless this broker's metadata has it, at
// t.rf replicas or as many as there are live brokers, and then calls
// t.sync. One made meanwhile by another broker or request is as good.
func (b *Broker) ensureInternalTopic(ctx context.Context, t internalTopic) error {
	if b.meta.topic(t.name) != nil {
		return nil
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return err
	}
	rf := max(min(t.rf, len(brokers)), 1)
	spec := &topicSpec{name: t.name, partitions: t.partitions, replication: int16(rf), configs: t.configs(rf)}
	if err := b.createInternalTopic(ctx, spec); err != nil {
		return err
	}
	t.sync()
	return nil
}

// createInternalTopic creates a topic the broker needs (an internal
// topic, a streams group's); TOPIC_ALREADY_EXISTS is success once this
// broker's metadata has the topic.
func (b *Broker) createInternalTopic(ctx context.Context, spec *topicSpec) error {
	err := b.createTopic(ctx, spec, false)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return b.awaitTopic(ctx, spec.name, 1)
	}
	return err
}

// awaitTopic syncs the metadata cache until the topic has n partitions
// here (from the store's topic cache, which the topic reaches through its
// watch).
func (b *Broker) awaitTopic(ctx context.Context, name string, n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := b.syncCachedMetadata(ctx); err != nil {
			b.log.Warn("metadata sync", "err", err)
		}
		if t := b.meta.topic(name); t != nil && len(t.parts) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return errTimeout
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// assignReplicas spreads partitions over brokers round-robin from start,
// each partition's replicas on consecutive brokers, as Kafka's rack-unaware
// assignment does.
func assignReplicas(brokers []int32, partitions, rf, start int) [][]int32 {
	out := make([][]int32, partitions)
	n := len(brokers)
	for p := range partitions {
		rs := make([]int32, rf)
		for r := range rf {
			rs[r] = brokers[(start+p+r)%n]
		}
		out[p] = rs
	}
	return out
}

// placeReplicas assigns replicas to brokers: rack-aware when any broker
// has a rack (controller.AssignReplicas), else as assignReplicas.
func placeReplicas(brokers []controller.BrokerInfo, partitions, rf, start int) ([][]int32, error) {
	ids := make([]int32, len(brokers))
	racks := false
	for i, bi := range brokers {
		ids[i] = bi.ID
		racks = racks || bi.Rack != ""
	}
	if !racks {
		return assignReplicas(ids, partitions, rf, start), nil
	}
	a, err := controller.AssignReplicas(brokers, partitions, rf, start)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.InvalidReplicationFactor, err)
	}
	return a, nil
}

// validateAssignment checks explicit replica assignments: every replica a
// live broker, no duplicates, every partition the same replication factor
// (rf, or that of the first partition when rf is -1).
func validateAssignment(assignment [][]int32, live []int32, rf int) error {
	for p, rs := range assignment {
		if len(rs) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", kerr.InvalidReplicaAssignment, p)
		}
		if rf == -1 {
			rf = len(rs)
		}
		if len(rs) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas, want %d", kerr.InvalidReplicaAssignment, p, len(rs), rf)
		}
		for i, id := range rs {
			if !slices.Contains(live, id) {
				return fmt.Errorf("%w: broker %d in partition %d is not registered", kerr.InvalidReplicaAssignment, id, p)
			}
			if slices.Contains(rs[:i], id) {
				return fmt.Errorf("%w: duplicate replica %d in partition %d", kerr.InvalidReplicaAssignment, id, p)
			}
		}
	}
	return nil
}
