package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Topic is a topic's metadata as stored in etcd.
type Topic struct {
	Name string
	ID   [16]byte
	// Assignment[p] lists the replicas of partition p, preferred leader
	// first.
	Assignment [][]int32
	// Configs are the topic's overrides (/config/topics/<topic>); never nil.
	Configs map[string]string
	// Partitions[p] is the leader/ISR state of partition p. A partition
	// whose state key is missing has Leader -1 and Version 0.
	Partitions []PartitionState
	// Adding and Removing are the replicas of partitions being reassigned
	// (AlterReassignments): Assignment[p] then holds the target replicas
	// and the original ones; Adding[p] the targets not yet in the
	// original, Removing[p] the originals not in the target. nil when no
	// partition is.
	Adding, Removing map[int32][]int32
	// Version is the etcd mod revision of /brokers/topics/<topic>;
	// ConfigVersion that of /config/topics/<topic> (0 when absent).
	Version, ConfigVersion int64

	created int64 // create revision of /brokers/topics/<topic>
}

// topicValue is the JSON of /brokers/topics/<topic>, as Kafka wrote it to
// ZooKeeper (version 3: with the topic id).
type topicValue struct {
	Version          int                `json:"version"`
	TopicID          string             `json:"topic_id"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
}

// configValue is the JSON of /config/topics/<topic>.
type configValue struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

func encodeTopic(id [16]byte, assignment [][]int32) ([]byte, error) {
	return encodeTopicReassigning(id, assignment, nil, nil)
}

// encodeTopicReassigning is encodeTopic with the replicas being added and
// removed by reassignments, in Kafka's adding_replicas/removing_replicas.
func encodeTopicReassigning(id [16]byte, assignment [][]int32, adding, removing map[int32][]int32) ([]byte, error) {
	v := topicValue{
		Version:          3,
		TopicID:          EncodeUUID(id),
		Partitions:       make(map[string][]int32, len(assignment)),
		AddingReplicas:   map[string][]int32{},
		RemovingReplicas: map[string][]int32{},
	}
	for p, rs := range assignment {
		v.Partitions[strconv.Itoa(p)] = rs
	}
	for p, rs := range adding {
		if len(rs) > 0 {
			v.AddingReplicas[strconv.Itoa(int(p))] = rs
		}
	}
	for p, rs := range removing {
		if len(rs) > 0 {
			v.RemovingReplicas[strconv.Itoa(int(p))] = rs
		}
	}
	return json.Marshal(v)
}

func decodeTopic(name string, data []byte) (*Topic, error) {
	var v topicValue
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	id, err := DecodeUUID(v.TopicID)
	if err != nil {
		return nil, err
	}
	n := len(v.Partitions)
	t := &Topic{Name: name, ID: id, Assignment: make([][]int32, n), Configs: map[string]string{}}
	for ps, rs := range v.Partitions {
		p, err := strconv.Atoi(ps)
		if err != nil || p < 0 || p >= n {
			return nil, fmt.Errorf("partition %q of %d", ps, n)
		}
		t.Assignment[p] = rs
	}
	for p, rs := range t.Assignment {
		if len(rs) == 0 {
			return nil, fmt.Errorf("partition %d has no replica", p)
		}
	}
	parse := func(m map[string][]int32) (map[int32][]int32, error) {
		var out map[int32][]int32
		for ps, rs := range m {
			p, err := strconv.Atoi(ps)
			if err != nil || p < 0 || p >= n {
				return nil, fmt.Errorf("reassigned partition %q of %d", ps, n)
			}
			if len(rs) == 0 {
				continue
			}
			if out == nil {
				out = map[int32][]int32{}
			}
			out[int32(p)] = rs
		}
		return out, nil
	}
	if t.Adding, err = parse(v.AddingReplicas); err != nil {
		return nil, err
	}
	if t.Removing, err = parse(v.RemovingReplicas); err != nil {
		return nil, err
	}
	t.Partitions = make([]PartitionState, n)
	for p := range t.Partitions {
		t.Partitions[p] = PartitionState{Leader: -1}
	}
	return t, nil
}

func encodeConfig(c map[string]string) ([]byte, error) {
	if c == nil {
		c = map[string]string{}
	}
	return json.Marshal(configValue{Version: 1, Config: c})
}

func decodeConfig(data []byte) (map[string]string, error) {
	var v configValue
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v.Config == nil {
		v.Config = map[string]string{}
	}
	return v.Config, nil
}

// validTopicName rejects what would break the key layout. Kafka's own
// rules (legal characters, length, "." and "..") are the broker's to check
// and map to INVALID_TOPIC_EXCEPTION.
func validTopicName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("%w: topic name %q", ErrInvalid, name)
	}
	return nil
}

func validAssignment(from int, assignment [][]int32) error {
	for i, rs := range assignment {
		if len(rs) == 0 {
			return fmt.Errorf("%w: partition %d has no replica", ErrInvalid, from+i)
		}
		for j, r := range rs {
			if r < 0 {
				return fmt.Errorf("%w: partition %d: replica %d", ErrInvalid, from+i, r)
			}
			if slices.Contains(rs[:j], r) {
				return fmt.Errorf("%w: partition %d: replica %d twice", ErrInvalid, from+i, r)
			}
		}
	}
	return nil
}

// initialStateOps returns the puts of the first state of partitions
// from..from+len(assignment)-1: leader = first replica, epoch 0, ISR = all.
func (s *Store) initialStateOps(name string, from int, assignment [][]int32) ([]clientv3.Op, error) {
	ce := s.controllerEpoch()
	ops := make([]clientv3.Op, 0, len(assignment))
	for i, rs := range assignment {
		st := PartitionState{Leader: rs[0], LeaderEpoch: 0, ISR: slices.Clone(rs), ControllerEpoch: ce}
		val, err := encodeState(st)
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(s.stateKey(name, int32(from+i)), string(val)))
	}
	return ops, nil
}

// CreateTopic writes, in one etcd transaction and only if neither the
// topic nor its deletion marker exists (else ErrTopicExists), the topic key
// (id and assignment), the state of every partition (leader = first
// replica, leader epoch 0, ISR = all replicas) and the config overrides.
//
// That is len(assignment)+2 operations. An external etcd allows 128 by
// default (--max-txn-ops); beyond its limit the states are written in
// further transactions, fenced on the topic key (see commitChunked).
func (s *Store) CreateTopic(ctx context.Context, name string, id [16]byte, assignment [][]int32, configs map[string]string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := validTopicName(name); err != nil {
		return err
	}
	if id == ([16]byte{}) {
		return fmt.Errorf("%w: zero topic id", ErrInvalid)
	}
	if len(assignment) == 0 {
		return fmt.Errorf("%w: topic %s: no partition", ErrInvalid, name)
	}
	if err := validAssignment(0, assignment); err != nil {
		return err
	}
	tv, err := encodeTopic(id, assignment)
	if err != nil {
		return err
	}
	cv, err := encodeConfig(configs)
	if err != nil {
		return err
	}
	ops, err := s.initialStateOps(name, 0, assignment)
	if err != nil {
		return err
	}
	head := []clientv3.Op{clientv3.OpPut(s.topicKey(name), string(tv)), clientv3.OpPut(s.topicConfigKey(name), string(cv))}
	ok, err := s.commitChunked(ctx, name, 0, []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(s.topicKey(name)), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(s.deleteMarkerKey(name)), "=", 0),
	}, head, ops)
	if err != nil {
		return fmt.Errorf("controller: creating topic %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	return nil
}

// txnChunk is the number of operations per transaction when etcd refuses
// one transaction for all (its --max-txn-ops defaults to 128).
const txnChunk = 100

// commitChunked commits head and states under cond in one transaction. If
// etcd refuses that many operations, it commits head with the first states
// under cond, then the other states in chunks, each conditioned on the
// topic key still being the one just written (same create revision), so a
// topic deleted or re-created meanwhile is never given stale states. Until
// the last chunk lands, readers see some partitions without a state
// (Leader -1, Version 0). created is the create revision of the topic key,
// 0 when head creates it. It reports whether cond held.
func (s *Store) commitChunked(ctx context.Context, name string, created int64, cond []clientv3.Cmp, head, states []clientv3.Op) (bool, error) {
	resp, err := s.cli.Txn(ctx).If(cond...).Then(append(slices.Clone(head), states...)...).Commit()
	if err == nil {
		return resp.Succeeded, nil
	}
	if !errors.Is(err, rpctypes.ErrTooManyOps) || len(head) >= txnChunk {
		return false, err
	}
	n := min(txnChunk-len(head), len(states))
	resp, err = s.cli.Txn(ctx).If(cond...).Then(append(slices.Clone(head), states[:n]...)...).Commit()
	if err != nil || !resp.Succeeded {
		return false, err
	}
	if created == 0 {
		created = resp.Header.Revision // head created the topic key
	}
	for rest := states[n:]; len(rest) > 0; {
		k := min(txnChunk, len(rest))
		r, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(s.topicKey(name)), "=", created)).
			Then(rest[:k]...).
			Commit()
		if err != nil {
			return true, err
		}
		if !r.Succeeded {
			return true, fmt.Errorf("%w: %s deleted or re-created while its partitions were written", ErrStale, name)
		}
		rest = rest[k:]
	}
	return true, nil
}

// DeleteTopic removes every key of the topic (topic, partition states,
// config overrides, deletion marker) in one transaction; ErrUnknownTopic
// when the topic key is absent. Brokers learn it through WatchTopics and
// delete their logs; a topic re-created with the same name has a new id.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := validTopicName(name); err != nil {
		return err
	}
	key := s.topicKey(name)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
		Then(
			clientv3.OpDelete(key),
			clientv3.OpDelete(key+"/", clientv3.WithPrefix()),
			clientv3.OpDelete(s.topicConfigKey(name)),
			clientv3.OpDelete(s.deleteMarkerKey(name)),
		).
		Commit()
	if err != nil {
		return fmt.Errorf("controller: deleting topic %s: %w", name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return nil
}

// AddPartitions appends partitions to a topic: newAssignment[i] holds the
// replicas of partition n+i, n being the partition count read inside the
// call. The topic key and the new state keys are written in one
// transaction conditioned on the topic key's revision; if another writer
// changed the topic in between, ErrStale (re-read and decide again: never
// blindly retry, or partitions are added twice).
func (s *Store) AddPartitions(ctx context.Context, name string, newAssignment [][]int32) error {
	if len(newAssignment) == 0 {
		return fmt.Errorf("%w: topic %s: no partition to add", ErrInvalid, name)
	}
	t, err := s.Topic(ctx, name)
	if err != nil {
		return err
	}
	n := len(t.Assignment)
	if err := validAssignment(n, newAssignment); err != nil {
		return err
	}
	tv, err := encodeTopicReassigning(t.ID, append(slices.Clone(t.Assignment), newAssignment...), t.Adding, t.Removing)
	if err != nil {
		return err
	}
	ops, err := s.initialStateOps(name, n, newAssignment)
	if err != nil {
		return err
	}
	ok, err := s.commitChunked(ctx, name, t.created,
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.topicKey(name)), "=", t.Version)},
		[]clientv3.Op{clientv3.OpPut(s.topicKey(name), string(tv))}, ops)
	if err != nil {
		return fmt.Errorf("controller: adding partitions to %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("%w: topic %s changed while adding partitions", ErrStale, name)
	}
	return nil
}

// SetTopicConfig replaces the topic's override map, provided the topic
// exists (else ErrUnknownTopic). For read-modify-write use UpdateTopicConfig.
func (s *Store) SetTopicConfig(ctx context.Context, name string, configs map[string]string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := validTopicName(name); err != nil {
		return err
	}
	cv, err := encodeConfig(configs)
	if err != nil {
		return err
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.topicKey(name)), ">", 0)).
		Then(clientv3.OpPut(s.topicConfigKey(name), string(cv))).
		Commit()
	if err != nil {
		return fmt.Errorf("controller: setting configs of %s: %w", name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return nil
}

// UpdateTopicConfig applies update to the topic's current overrides (a
// copy it may modify and return) and writes the result conditioned on the
// config key's revision, retrying on a lost race until ctx ends. An error
// from update aborts and is returned as is. IncrementalAlterConfigs needs
// this; a blind SetTopicConfig could lose a concurrent change.
func (s *Store) UpdateTopicConfig(ctx context.Context, name string, update func(map[string]string) (map[string]string, error)) error {
	for {
		t, err := s.Topic(ctx, name)
		if err != nil {
			return err
		}
		next, err := update(maps.Clone(t.Configs))
		if err != nil {
			return err
		}
		cv, err := encodeConfig(next)
		if err != nil {
			return err
		}
		resp, err := s.cli.Txn(ctx).
			If(
				clientv3.Compare(clientv3.ModRevision(s.topicKey(name)), "=", t.Version),
				clientv3.Compare(clientv3.ModRevision(s.topicConfigKey(name)), "=", t.ConfigVersion),
			).
			Then(clientv3.OpPut(s.topicConfigKey(name), string(cv))).
			Commit()
		if err != nil {
			return fmt.Errorf("controller: updating configs of %s: %w", name, err)
		}
		if resp.Succeeded {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Topic reads one topic (one consistent etcd read); ErrUnknownTopic when
// absent.
func (s *Store) Topic(ctx context.Context, name string) (*Topic, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := validTopicName(name); err != nil {
		return nil, err
	}
	key := s.topicKey(name)
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(key),
		clientv3.OpGet(key+"/", clientv3.WithPrefix()),
		clientv3.OpGet(s.topicConfigKey(name)),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("controller: reading topic %s: %w", name, err)
	}
	var kvs []*mvccpb.KeyValue
	for _, r := range resp.Responses[:2] {
		kvs = append(kvs, r.GetResponseRange().Kvs...)
	}
	topics := s.parseTopics(kvs, resp.Responses[2].GetResponseRange().Kvs)
	t, ok := topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return t, nil
}

// Topics returns every topic, read in one etcd transaction, and the etcd
// revision of that read: pass it to WatchTopics to learn every later
// change. A topic whose value does not parse is logged and left out.
func (s *Store) Topics(ctx context.Context) (map[string]*Topic, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(s.topicsPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(s.topicConfigsPrefix(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, 0, fmt.Errorf("controller: reading topics: %w", err)
	}
	topics := s.parseTopics(resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs)
	return topics, resp.Header.Revision, nil
}

// parseTopics builds topics from the keys under /brokers/topics/ and
// /config/topics/.
func (s *Store) parseTopics(topicKVs, configKVs []*mvccpb.KeyValue) map[string]*Topic {
	topics := make(map[string]*Topic)
	tpfx := s.topicsPrefix()
	var states []*mvccpb.KeyValue
	for _, kv := range topicKVs {
		rest := strings.TrimPrefix(string(kv.Key), tpfx)
		if strings.Contains(rest, "/") {
			states = append(states, kv)
			continue
		}
		t, err := decodeTopic(rest, kv.Value)
		if err != nil {
			s.log.Warn("etcd: skipping malformed topic", "key", string(kv.Key), "err", err)
			continue
		}
		t.Version, t.created = kv.ModRevision, kv.CreateRevision
		topics[rest] = t
	}
	for _, kv := range states {
		// <topic>/partitions/<p>/state
		parts := strings.Split(strings.TrimPrefix(string(kv.Key), tpfx), "/")
		if len(parts) != 4 || parts[1] != "partitions" || parts[3] != "state" {
			continue
		}
		t := topics[parts[0]]
		if t == nil {
			continue // state without topic: a create or delete in another revision
		}
		p, err := strconv.Atoi(parts[2])
		if err != nil || p < 0 || p >= len(t.Partitions) {
			continue
		}
		st, err := decodeState(kv.Value)
		if err != nil {
			s.log.Warn("etcd: skipping malformed partition state", "key", string(kv.Key), "err", err)
			continue
		}
		st.Version = kv.ModRevision
		t.Partitions[p] = st
	}
	cpfx := s.topicConfigsPrefix()
	for _, kv := range configKVs {
		t := topics[strings.TrimPrefix(string(kv.Key), cpfx)]
		if t == nil {
			continue
		}
		c, err := decodeConfig(kv.Value)
		if err != nil {
			s.log.Warn("etcd: skipping malformed topic config", "key", string(kv.Key), "err", err)
			continue
		}
		t.Configs = c
		t.ConfigVersion = kv.ModRevision
	}
	return topics
}
