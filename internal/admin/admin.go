// Package admin is what the samsa CLI and the web console ask of a Kafka
// cluster, through franz-go's kadm: cluster and broker details, topics with
// their partitions, offsets and configs, consumer groups with their lag,
// and the changes (create and delete topics, alter configs, move a group's
// offsets). It talks to any Kafka-compatible cluster over the Kafka
// protocol, so the cluster's own authorization applies, and it imports
// nothing of the broker. Its types are plain, JSON-tagged values: the CLI
// prints them as tables or JSON, the console's API sends them as JSON.
package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is a kadm client of one cluster.
type Client struct {
	KGO *kgo.Client
	ADM *kadm.Client

	seeds []string
	opts  []kgo.Opt // New's, for the consumers of Read
}

// New connects to the cluster at the seed brokers (host:port).
func New(seeds []string, opts ...kgo.Opt) (*Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("samsa-admin")}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &Client{KGO: cl, ADM: kadm.NewClient(cl), seeds: seeds, opts: opts}, nil
}

// Close closes the connections.
func (c *Client) Close() { c.KGO.Close() }

// Broker is one broker of the cluster.
type Broker struct {
	ID         int32  `json:"id"`
	Host       string `json:"host"`
	Port       int32  `json:"port"`
	Rack       string `json:"rack,omitempty"`
	Controller bool   `json:"controller"`
	Reachable  bool   `json:"reachable"`
	Leaders    int    `json:"leaders"`  // partitions it leads
	Replicas   int    `json:"replicas"` // partition replicas it holds
}

// Cluster is the cluster as Metadata describes it.
type Cluster struct {
	ID         string   `json:"cluster_id"`
	Controller int32    `json:"controller"`
	Brokers    []Broker `json:"brokers"`
	Topics     int      `json:"topics"`
	Partitions int      `json:"partitions"`
}

// Health is a verdict on the cluster: a controller elected, every
// registered broker answering, every partition led and fully replicated.
type Health struct {
	Healthy             bool     `json:"healthy"`
	Controller          int32    `json:"controller"`
	Brokers             []int32  `json:"brokers"`
	UnreachableBrokers  []int32  `json:"unreachable_brokers"`
	LeaderlessPartition []string `json:"leaderless_partitions"`
	UnderReplicated     []string `json:"under_replicated_partitions"`
	Problems            []string `json:"problems"`
}

// Cluster describes the cluster: brokers (with whether each answers
// ApiVersions), the controller, topic and partition counts.
func (c *Client) Cluster(ctx context.Context) (Cluster, error) {
	md, err := c.ADM.Metadata(ctx)
	if err != nil {
		return Cluster{}, err
	}
	reach := c.reachable(ctx)
	out := Cluster{ID: md.Cluster, Controller: md.Controller}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, t := range md.Topics {
		out.Topics++
		for _, p := range t.Partitions {
			out.Partitions++
			leaders[p.Leader]++
			for _, r := range p.Replicas {
				replicas[r]++
			}
		}
	}
	for _, b := range md.Brokers {
		br := Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Controller: b.NodeID == md.Controller,
			Reachable: reach[b.NodeID], Leaders: leaders[b.NodeID], Replicas: replicas[b.NodeID]}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		out.Brokers = append(out.Brokers, br)
	}
	slices.SortFunc(out.Brokers, func(a, b Broker) int { return int(a.ID - b.ID) })
	return out, nil
}

// reachable asks every broker for its API versions.
func (c *Client) reachable(ctx context.Context) map[int32]bool {
	out := map[int32]bool{}
	vs, err := c.ADM.ApiVersions(ctx)
	if err != nil {
		return out
	}
	for _, v := range vs {
		out[v.NodeID] = v.Err == nil
	}
	return out
}

// Health checks the cluster.
func (c *Client) Health(ctx context.Context) (Health, error) {
	md, err := c.ADM.Metadata(ctx)
	if err != nil {
		return Health{}, err
	}
	reach := c.reachable(ctx)
	h := Health{Controller: md.Controller, Brokers: []int32{}, UnreachableBrokers: []int32{},
		LeaderlessPartition: []string{}, UnderReplicated: []string{}, Problems: []string{}}
	for _, b := range md.Brokers {
		h.Brokers = append(h.Brokers, b.NodeID)
		if !reach[b.NodeID] {
			h.UnreachableBrokers = append(h.UnreachableBrokers, b.NodeID)
		}
	}
	slices.Sort(h.Brokers)
	slices.Sort(h.UnreachableBrokers)
	for _, t := range md.Topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			tp := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			if p.Leader < 0 {
				h.LeaderlessPartition = append(h.LeaderlessPartition, tp)
			}
			if len(p.ISR) < len(p.Replicas) {
				h.UnderReplicated = append(h.UnderReplicated, tp)
			}
		}
	}
	if md.Controller < 0 {
		h.Problems = append(h.Problems, "no controller")
	}
	if n := len(h.UnreachableBrokers); n > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf("%d unreachable brokers", n))
	}
	if n := len(h.LeaderlessPartition); n > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf("%d partitions without a leader", n))
	}
	if n := len(h.UnderReplicated); n > 0 {
		h.Problems = append(h.Problems, fmt.Sprintf("%d under-replicated partitions", n))
	}
	h.Healthy = len(h.Problems) == 0
	return h, nil
}

// TopicSummary is a line of the topic list.
type TopicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	UnderReplicated   int    `json:"under_replicated"`
	Records           int64  `json:"records"` // end offsets minus start offsets
	Size              int64  `json:"size"`    // bytes of the leaders' logs; -1: unknown
}

// Topics lists the topics, sorted by name; internal ones too when asked.
func (c *Client) Topics(ctx context.Context, internal bool) ([]TopicSummary, error) {
	var (
		td  kadm.TopicDetails
		err error
	)
	if internal {
		td, err = c.ADM.ListTopicsWithInternal(ctx)
	} else {
		td, err = c.ADM.ListTopics(ctx)
	}
	if err != nil {
		return nil, err
	}
	for name, d := range td {
		// A topic deleted while the list was made.
		if errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			delete(td, name)
		}
	}
	if err := td.Error(); err != nil {
		return nil, err
	}
	names := td.Names()
	starts, ends, _ := c.offsets(ctx, names...)
	sizes := c.sizes(ctx, td)
	out := []TopicSummary{}
	for _, t := range td.Sorted() {
		s := TopicSummary{Name: t.Topic, ID: t.ID.String(), Internal: t.IsInternal, Partitions: len(t.Partitions), Size: -1}
		for _, p := range t.Partitions {
			if n, ok := sizes[replica{t.Topic, p.Partition, p.Leader}]; ok {
				s.Size = max(s.Size, 0) + n
			}
			s.ReplicationFactor = max(s.ReplicationFactor, len(p.Replicas))
			if len(p.ISR) < len(p.Replicas) {
				s.UnderReplicated++
			}
			if e, ok := ends.Lookup(t.Topic, p.Partition); ok && e.Err == nil {
				if st, ok := starts.Lookup(t.Topic, p.Partition); ok && st.Err == nil {
					s.Records += e.Offset - st.Offset
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// replica is one partition's replica on one broker.
type replica struct {
	topic     string
	partition int32
	broker    int32
}

// sizes returns the bytes of every replica of the topics' partitions,
// from DescribeLogDirs; empty when the cluster does not answer it.
func (c *Client) sizes(ctx context.Context, td kadm.TopicDetails) map[replica]int64 {
	out := map[replica]int64{}
	set := kadm.TopicsSet{}
	for _, t := range td {
		for p := range t.Partitions {
			set.Add(t.Topic, p)
		}
	}
	if len(set) == 0 {
		return out
	}
	dirs, err := c.ADM.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return out
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if !p.IsFuture {
				out[replica{p.Topic, p.Partition, p.Broker}] += p.Size
			}
		})
	})
	return out
}

func (c *Client) offsets(ctx context.Context, topics ...string) (starts, ends kadm.ListedOffsets, err error) {
	if len(topics) == 0 {
		return nil, nil, nil
	}
	if starts, err = c.ADM.ListStartOffsets(ctx, topics...); err != nil {
		return nil, nil, err
	}
	ends, err = c.ADM.ListEndOffsets(ctx, topics...)
	return starts, ends, err
}

// Partition is one partition of a topic.
type Partition struct {
	ID          int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline_replicas"`
	StartOffset int64   `json:"start_offset"`
	EndOffset   int64   `json:"end_offset"` // high watermark
	Size        int64   `json:"size"`       // bytes of the leader's local log; -1: unknown
	// Remote is the leader's local and remote log of a tiered partition.
	Remote *RemoteLog `json:"remote,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// ConfigEntry is one config of a topic.
type ConfigEntry struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Topic is a topic described.
type Topic struct {
	Name       string        `json:"name"`
	ID         string        `json:"id"`
	Internal   bool          `json:"internal"`
	Partitions []Partition   `json:"partitions"`
	Configs    []ConfigEntry `json:"configs"`
	Tiered     *TieredTopic  `json:"tiered,omitempty"` // remote.storage.enable=true
}

// ErrUnknownTopic is the answer for a topic the cluster does not have.
var ErrUnknownTopic = errors.New("unknown topic")

// Topic describes one topic: its partitions with their offsets, and its
// configs (every one, with where its value comes from).
func (c *Client) Topic(ctx context.Context, name string) (Topic, error) {
	md, err := c.ADM.Metadata(ctx, name)
	if err != nil {
		return Topic{}, err
	}
	td, ok := md.Topics[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return Topic{}, fmt.Errorf("%w %q", ErrUnknownTopic, name)
	}
	if td.Err != nil {
		return Topic{}, td.Err
	}
	starts, ends, err := c.offsets(ctx, name)
	if err != nil {
		return Topic{}, err
	}
	sizes := c.sizes(ctx, kadm.TopicDetails{name: td})
	t := Topic{Name: name, ID: td.ID.String(), Internal: td.IsInternal, Partitions: []Partition{}, Configs: []ConfigEntry{}}
	for _, p := range td.Partitions.Sorted() {
		pt := Partition{ID: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: orEmpty(p.Replicas),
			ISR: orEmpty(p.ISR), Offline: orEmpty(p.OfflineReplicas), StartOffset: -1, EndOffset: -1, Size: -1}
		if n, ok := sizes[replica{name, p.Partition, p.Leader}]; ok {
			pt.Size = n
		}
		if p.Err != nil {
			pt.Error = p.Err.Error()
		}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			pt.StartOffset = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			pt.EndOffset = o.Offset
		}
		t.Partitions = append(t.Partitions, pt)
	}
	rcs, err := c.ADM.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return Topic{}, err
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return Topic{}, rc.Err
		}
		for _, cf := range rc.Configs {
			e := ConfigEntry{Name: cf.Key, Value: cf.MaybeValue(), Source: configSource(cf.Source), Sensitive: cf.Sensitive}
			t.Configs = append(t.Configs, e)
		}
	}
	slices.SortFunc(t.Configs, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
	c.tiered(ctx, &t)
	return t, nil
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// configSource names a config's source as kafka-configs.sh does.
func configSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster-default"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "static-broker"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	}
	return strings.ToLower(s.String())
}

// CreateTopic creates a topic; replicationFactor -1 takes the broker's
// default.replication.factor, partitions -1 its num.partitions.
func (c *Client) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]*string) error {
	resp, err := c.ADM.CreateTopic(ctx, partitions, replicationFactor, configs, name)
	if err != nil {
		return err
	}
	return withMessage(resp.Err, resp.ErrMessage)
}

// DeleteTopic deletes a topic.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	resp, err := c.ADM.DeleteTopic(ctx, name)
	if err != nil {
		return err
	}
	return withMessage(resp.Err, resp.ErrMessage)
}

// AlterTopicConfigs sets and removes (back to the default) configs of a
// topic, incrementally.
func (c *Client) AlterTopicConfigs(ctx context.Context, name string, set map[string]string, remove []string) error {
	var acs []kadm.AlterConfig
	for k, v := range set {
		acs = append(acs, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
	}
	for _, k := range remove {
		acs = append(acs, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(acs) == 0 {
		return errors.New("no config to change")
	}
	rs, err := c.ADM.AlterTopicConfigs(ctx, acs, name)
	if err != nil {
		return err
	}
	return firstErr(rs, func(r kadm.AlterConfigsResponse) error { return withMessage(r.Err, r.ErrMessage) })
}

// AddPartitions raises a topic's partition count to total.
func (c *Client) AddPartitions(ctx context.Context, name string, total int) error {
	rs, err := c.ADM.UpdatePartitions(ctx, total, name)
	if err != nil {
		return err
	}
	r, ok := rs[name]
	if !ok {
		return fmt.Errorf("no answer for topic %q", name)
	}
	return withMessage(r.Err, r.ErrMessage)
}

// firstErr is the first error of a list of answers.
func firstErr[T any](rs []T, errOf func(T) error) error {
	for _, r := range rs {
		if err := errOf(r); err != nil {
			return err
		}
	}
	return nil
}

func withMessage(err error, msg string) error {
	if err == nil || msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}
