package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupSummary is a line of the group list.
type GroupSummary struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

// Groups lists the consumer groups of every broker, sorted by name.
func (c *Client) Groups(ctx context.Context) ([]GroupSummary, error) {
	lg, err := c.ADM.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := []GroupSummary{}
	for _, g := range lg.Sorted() {
		out = append(out, GroupSummary{Name: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	return out, nil
}

// TopicPartitions are partitions of one topic.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// Member is one member of a group.
type Member struct {
	ID         string            `json:"member_id"`
	InstanceID string            `json:"instance_id,omitempty"`
	ClientID   string            `json:"client_id"`
	Host       string            `json:"host"`
	Assigned   []TopicPartitions `json:"assigned"`
}

// GroupOffset is a group's position in one partition.
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // -1: none
	End       int64  `json:"end"`       // the high watermark
	Lag       int64  `json:"lag"`       // -1: unknown
	Member    string `json:"member_id,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Group is a group described, with its lag per partition.
type Group struct {
	Name         string        `json:"name"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocol_type"`
	Protocol     string        `json:"protocol"`
	Coordinator  int32         `json:"coordinator"`
	Members      []Member      `json:"members"`
	Offsets      []GroupOffset `json:"offsets"`
	TotalLag     int64         `json:"total_lag"`
}

// ErrUnknownGroup is the answer for a group the cluster does not have.
var ErrUnknownGroup = errors.New("unknown group")

// Group describes a group: its members and assignments, and its
// committed offset, end offset and lag in each partition it commits to
// or is assigned.
func (c *Client) Group(ctx context.Context, name string) (Group, error) {
	var l kadm.DescribedGroupLag
	found := false
	err := untilCoordinator(ctx, func() error {
		lags, err := c.ADM.Lag(ctx, name)
		if err != nil {
			return err
		}
		l, found = lags[name]
		if !found {
			return nil
		}
		return l.Error()
	})
	if err != nil && !found {
		return Group{}, err
	}
	if !found {
		return Group{}, fmt.Errorf("%w %q", ErrUnknownGroup, name)
	}
	if err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return Group{}, fmt.Errorf("%w %q", ErrUnknownGroup, name)
		}
		return Group{}, err
	}
	if l.State == "Dead" {
		return Group{}, fmt.Errorf("%w %q", ErrUnknownGroup, name)
	}
	g := Group{Name: name, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []Member{}, Offsets: []GroupOffset{}}
	for _, m := range l.Members {
		mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []TopicPartitions{}}
		if m.InstanceID != nil {
			mm.InstanceID = *m.InstanceID
		}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				mm.Assigned = append(mm.Assigned, TopicPartitions{Topic: t.Topic, Partitions: ps})
			}
			slices.SortFunc(mm.Assigned, func(a, b TopicPartitions) int { return strings.Compare(a.Topic, b.Topic) })
		}
		g.Members = append(g.Members, mm)
	}
	for _, ml := range l.Lag.Sorted() {
		o := GroupOffset{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Member != nil {
			o.Member, o.ClientID = ml.Member.MemberID, ml.Member.ClientID
		}
		if ml.Err != nil {
			o.Error = ml.Err.Error()
		}
		if ml.End.Err != nil {
			o.End = -1
		}
		if o.Lag > 0 {
			g.TotalLag += o.Lag
		}
		g.Offsets = append(g.Offsets, o)
	}
	return g, nil
}

// Target is where Seek moves a group: Kind "start", "end", "offset"
// (Offset) or "timestamp" (the first record at or after Millis).
type Target struct {
	Kind   string
	Offset int64
	Millis int64
}

// ParseTarget reads start, end, a number or @millis.
func ParseTarget(s string) (Target, error) {
	switch {
	case s == "start" || s == "beginning" || s == "earliest":
		return Target{Kind: "start"}, nil
	case s == "end" || s == "latest":
		return Target{Kind: "end"}, nil
	case strings.HasPrefix(s, "@"):
		var ms int64
		if _, err := fmt.Sscan(s[1:], &ms); err != nil || ms < 0 {
			return Target{}, fmt.Errorf("%q: expected @<milliseconds since the epoch>", s)
		}
		return Target{Kind: "timestamp", Millis: ms}, nil
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n < 0 {
		return Target{}, fmt.Errorf("%q: expected start, end, an offset or @<milliseconds>", s)
	}
	return Target{Kind: "offset", Offset: n}, nil
}

// Resolve returns the offset of the target in each partition of topics.
func (c *Client) Resolve(ctx context.Context, to Target, topics ...string) (kadm.Offsets, error) {
	var (
		listed kadm.ListedOffsets
		err    error
	)
	switch to.Kind {
	case "start", "offset":
		listed, err = c.ADM.ListStartOffsets(ctx, topics...)
	case "end":
		listed, err = c.ADM.ListEndOffsets(ctx, topics...)
	case "timestamp":
		listed, err = c.ADM.ListOffsetsAfterMilli(ctx, to.Millis, topics...)
	default:
		return nil, fmt.Errorf("unknown target %q", to.Kind)
	}
	if err != nil {
		return nil, err
	}
	if err := listed.Error(); err != nil {
		return nil, err
	}
	out := kadm.Offsets{}
	var ends kadm.ListedOffsets
	if to.Kind == "offset" {
		if ends, err = c.ADM.ListEndOffsets(ctx, topics...); err != nil {
			return nil, err
		}
	}
	listed.Each(func(o kadm.ListedOffset) {
		at := o.Offset
		if to.Kind == "offset" {
			// Clamped to the partition's offsets, as kafka-consumer-groups.sh does.
			at = max(to.Offset, o.Offset)
			if e, ok := ends.Lookup(o.Topic, o.Partition); ok && e.Err == nil {
				at = min(at, e.Offset)
			}
		}
		out.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: at, LeaderEpoch: -1})
	})
	return out, nil
}

// Seek commits new offsets for a group that has no members (as
// kafka-consumer-groups.sh --reset-offsets requires): for topic, or for
// every topic the group has offsets in when topic is empty. It returns
// the offsets committed.
func (c *Client) Seek(ctx context.Context, group, topic string, to Target) ([]GroupOffset, error) {
	var dg kadm.DescribedGroups
	err := untilCoordinator(ctx, func() (err error) {
		dg, err = c.ADM.DescribeGroups(ctx, group)
		if err == nil {
			err = dg[group].Err
		}
		return err
	})
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, err
	}
	if d, ok := dg[group]; ok && d.Err == nil && d.State != "Empty" && d.State != "Dead" {
		return nil, fmt.Errorf("group %q is %s: stop its consumers first", group, d.State)
	}
	topics := []string{topic}
	if topic == "" {
		fo, err := c.ADM.FetchOffsets(ctx, group)
		if err != nil {
			return nil, err
		}
		topics = fo.Offsets().TopicsSet().Topics()
		if len(topics) == 0 {
			return nil, fmt.Errorf("group %q has no committed offsets: name a topic", group)
		}
	}
	offs, err := c.Resolve(ctx, to, topics...)
	if err != nil {
		return nil, err
	}
	resps, err := c.ADM.CommitOffsets(ctx, group, offs)
	if err != nil {
		return nil, err
	}
	if err := resps.Error(); err != nil {
		return nil, err
	}
	out := []GroupOffset{}
	offs.Each(func(o kadm.Offset) {
		out = append(out, GroupOffset{Topic: o.Topic, Partition: o.Partition, Committed: o.At, End: -1, Lag: -1})
	})
	slices.SortFunc(out, func(a, b GroupOffset) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), int(a.Partition-b.Partition))
	})
	return out, nil
}

// DeleteGroup deletes a group that has no members.
func (c *Client) DeleteGroup(ctx context.Context, group string) error {
	return untilCoordinator(ctx, func() error {
		r, err := c.ADM.DeleteGroup(ctx, group)
		if err != nil {
			return err
		}
		return r.Err
	})
}

// coordinatorWait bounds how long untilCoordinator retries, as the Java
// admin client's default.api.timeout.ms bounds its retries (60 s there;
// the console and the CLI answer a person, so less).
const coordinatorWait = 15 * time.Second

// untilCoordinator runs f again while it fails because the group's
// coordinator is not there yet: a broker answers COORDINATOR_NOT_AVAILABLE
// while it creates __consumer_offsets (as Kafka does on a fresh cluster)
// and COORDINATOR_LOAD_IN_PROGRESS while it loads the partition, and the
// Java admin client retries both until its timeout.
func untilCoordinator(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, coordinatorWait)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		err := f()
		if !errors.Is(err, kerr.CoordinatorNotAvailable) && !errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, kerr.NotCoordinator) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}
