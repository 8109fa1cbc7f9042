package groups

// The topology of a KIP-1071 streams group, as its first member declares
// it in StreamsGroupHeartbeat, and its configuration against the topics
// that exist, as Kafka's InternalTopicManager does it: the source topics
// must exist; the partition counts of the repartition topics follow from
// their upstream subtopologies (or are fixed by the topology), copartition
// groups must agree, and a changelog topic has one partition per task of
// its subtopology. Internal topics that are missing are named for the
// broker to create (MISSING_INTERNAL_TOPICS until they exist); an internal
// topic with another partition count is INCORRECTLY_PARTITIONED_TOPICS.

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The status codes of StreamsGroupHeartbeat (KIP-1071).
const (
	streamsStatusStaleTopology          = 0
	streamsStatusMissingSourceTopics    = 1
	streamsStatusIncorrectlyPartitioned = 2
	streamsStatusMissingInternalTopics  = 3
	streamsStatusShutdownApplication    = 4
	streamsStatusAssignmentDelayed      = 5
)

// streamsTopic is an internal topic of a topology: a changelog or a
// repartition topic. partitions 0: decided by the coordinator; rf 0: the
// broker's default.
type streamsTopic struct {
	name       string
	partitions int32
	rf         int16
	configs    [][2]string // as the member sent them
}

// subtopology is one subtopology: its tasks read partition p of each of
// its source and repartition source topics.
type subtopology struct {
	id                 string
	sources            []string
	sourceRegex        []string
	changelogs         []streamsTopic
	repartitionSinks   []string
	repartitionSources []streamsTopic
	// copartition groups, by index into sources, sourceRegex and
	// repartitionSources, as the request carries them.
	copartition []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup
}

// streamsTopology is a group's topology; subs sorted by id.
type streamsTopology struct {
	epoch int32
	subs  []subtopology
}

func topicInfos(ts []kmsg.TopicInfo) []streamsTopic {
	out := make([]streamsTopic, 0, len(ts))
	for _, t := range ts {
		st := streamsTopic{name: t.Topic, partitions: t.NumPartitions, rf: t.ReplicationFactor}
		for _, c := range t.Configs {
			st.configs = append(st.configs, [2]string{c.Key, c.Value})
		}
		out = append(out, st)
	}
	return out
}

// topologyFromRequest is the request's topology; validateStreamsTopology
// has checked it.
func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTopology {
	st := &streamsTopology{epoch: t.Epoch}
	for _, s := range t.Subtopologies {
		st.subs = append(st.subs, subtopology{
			id:                 s.SubtopologyID,
			sources:            slices.Clone(s.SourceTopics),
			sourceRegex:        slices.Clone(s.SourceTopicRegex),
			changelogs:         topicInfos(s.StateChangelogTopics),
			repartitionSinks:   slices.Clone(s.RepartitionSinkTopics),
			repartitionSources: topicInfos(s.RepartitionSourceTopics),
			copartition:        slices.Clone(s.CopartitionGroups),
		})
	}
	slices.SortFunc(st.subs, func(a, b subtopology) int { return strings.Compare(a.id, b.id) })
	return st
}

// equal reports whether two topologies are the same (the epoch aside).
func (t *streamsTopology) equal(o *streamsTopology) bool {
	return slices.EqualFunc(t.subs, o.subs, func(a, b subtopology) bool {
		return a.id == b.id && slices.Equal(a.sources, b.sources) && slices.Equal(a.sourceRegex, b.sourceRegex) &&
			slices.Equal(a.repartitionSinks, b.repartitionSinks) &&
			slices.EqualFunc(a.changelogs, b.changelogs, equalStreamsTopic) &&
			slices.EqualFunc(a.repartitionSources, b.repartitionSources, equalStreamsTopic) &&
			slices.EqualFunc(a.copartition, b.copartition, func(x, y kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup) bool {
				return slices.Equal(x.SourceTopics, y.SourceTopics) && slices.Equal(x.SourceTopicRegex, y.SourceTopicRegex) &&
					slices.Equal(x.RepartitionSourceTopics, y.RepartitionSourceTopics)
			})
	})
}

func equalStreamsTopic(a, b streamsTopic) bool {
	return a.name == b.name && a.partitions == b.partitions && a.rf == b.rf && slices.Equal(a.configs, b.configs)
}

// validateStreamsTopology checks the topology a member joins with, as
// Kafka's throwIfInvalidTopology (a changelog topic's partition count is
// the coordinator's to decide), and that the copartition groups' indexes
// and the regular expressions can be used: the message of the
// STREAMS_INVALID_TOPOLOGY it answers, or "".
func validateStreamsTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) string {
	for _, s := range t.Subtopologies {
		for _, c := range s.StateChangelogTopics {
			if c.NumPartitions != 0 {
				return fmt.Sprintf("Changelog topic %s must have an undefined partition count, but it is set to %d.", c.Topic, c.NumPartitions)
			}
		}
		for _, re := range s.SourceTopicRegex {
			if _, err := regexp.Compile(re); err != nil {
				return fmt.Sprintf("Invalid source topic regex %s in subtopology %s: %v", re, s.SubtopologyID, err)
			}
		}
		for _, g := range s.CopartitionGroups {
			for _, idx := range []struct {
				is []int16
				n  int
			}{{g.SourceTopics, len(s.SourceTopics)}, {g.SourceTopicRegex, len(s.SourceTopicRegex)}, {g.RepartitionSourceTopics, len(s.RepartitionSourceTopics)}} {
				for _, i := range idx.is {
					if i < 0 || int(i) >= idx.n {
						return fmt.Sprintf("Copartition group of subtopology %s refers to index %d of a list of %d topics.", s.SubtopologyID, i, idx.n)
					}
				}
			}
		}
	}
	return ""
}

// streamsStatus is a status of the heartbeat answer.
type streamsStatus struct {
	code   int8
	detail string
}

// configuredTopology is a topology configured against the topics that
// exist: the number of tasks of each subtopology (ready only when no
// status stands in the way), the internal topics to create.
type configuredTopology struct {
	epoch   int32
	tasks   map[string]int32 // subtopology -> partitions (tasks)
	inputs  map[string][]string
	status  *streamsStatus
	create  []StreamsTopicToCreate
	counted map[string]int32 // every internal topic's decided partition count
}

func (ct *configuredTopology) ready() bool { return ct != nil && ct.status == nil && ct.tasks != nil }

// StreamsTopicToCreate is an internal topic of a streams group that the
// broker must create, as Kafka's coordinator asks its broker to.
type StreamsTopicToCreate struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // -1: the broker's default
	Configs           map[string]string
}

// resolvedSources are a subtopology's source topics, the regular
// expressions resolved against the topics that exist.
func (s *subtopology) resolvedSources(meta map[string]TopicMeta) []string {
	out := slices.Clone(s.sources)
	for _, re := range s.sourceRegex {
		r, err := regexp.Compile(re)
		if err != nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(meta)) {
			if r.MatchString(name) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// configureTopology is InternalTopicManager.configureTopics; the error is
// the STREAMS_INVALID_TOPOLOGY to answer for a topology that cannot be
// configured at all.
func configureTopology(t *streamsTopology, meta map[string]TopicMeta) (*configuredTopology, error) {
	ct := &configuredTopology{epoch: t.epoch}
	var missing []string
	for _, s := range t.subs {
		for _, src := range s.sources {
			if _, ok := meta[src]; !ok && !slices.Contains(missing, src) {
				missing = append(missing, src)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		ct.status = &streamsStatus{streamsStatusMissingSourceTopics, "Source topics " + strings.Join(missing, ", ") + " are missing."}
		return ct, nil
	}
	decided := map[string]int32{}
	count := func(topic string) (int32, bool) {
		if m, ok := meta[topic]; ok {
			return m.Partitions, true
		}
		n, ok := decided[topic]
		return n, ok
	}
	// Repartition topics: fixed ones as the topology says, the others as
	// the largest input of the subtopologies writing them, until nothing
	// moves.
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.partitions > 0 {
				decided[r.name] = r.partitions
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for _, s := range t.subs {
			var in int32
			known := true
			for _, src := range s.resolvedSources(meta) {
				n, _ := count(src)
				in = max(in, n)
			}
			for _, r := range s.repartitionSources {
				n, ok := count(r.name)
				known = known && ok
				in = max(in, n)
			}
			if !known || in == 0 {
				continue
			}
			for _, sink := range s.repartitionSinks {
				if _, ok := decided[sink]; !ok {
					decided[sink] = in
					moved = true
				}
			}
		}
	}
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if _, ok := decided[r.name]; !ok {
				return nil, kafkaErrorf(kerr.StreamsInvalidTopology, "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic.")
			}
		}
	}
	if st := enforceCopartitioning(t, meta, decided, count); st != nil {
		ct.status = st
		return ct, nil
	}
	ct.tasks, ct.inputs = map[string]int32{}, map[string][]string{}
	for _, s := range t.subs {
		var in int32
		inputs := s.resolvedSources(meta)
		for _, r := range s.repartitionSources {
			inputs = append(inputs, r.name)
		}
		for _, name := range inputs {
			n, ok := decided[name]
			if !ok {
				n, _ = count(name)
			}
			in = max(in, n)
		}
		ct.tasks[s.id], ct.inputs[s.id] = in, inputs
		for _, c := range s.changelogs {
			if !slices.Contains(s.sources, c.name) {
				decided[c.name] = in
			}
		}
	}
	ct.counted = decided
	// The internal topics: existing ones must have their count.
	want := map[string]streamsTopic{}
	for _, s := range t.subs {
		for _, it := range s.repartitionSources {
			want[it.name] = it
		}
		for _, it := range s.changelogs {
			// A source topic serving as its table's changelog is not
			// an internal topic.
			if !slices.Contains(s.sources, it.name) {
				want[it.name] = it
			}
		}
	}
	var absent []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		n := decided[name]
		if m, ok := meta[name]; ok {
			if m.Partitions != n {
				ct.tasks = nil
				ct.status = &streamsStatus{streamsStatusIncorrectlyPartitioned,
					fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", name, n, m.Partitions)}
				return ct, nil
			}
			continue
		}
		absent = append(absent, name)
		it := want[name]
		tc := StreamsTopicToCreate{Name: name, Partitions: n, ReplicationFactor: -1, Configs: map[string]string{}}
		if it.rf > 0 {
			tc.ReplicationFactor = it.rf
		}
		for _, kv := range it.configs {
			tc.Configs[kv[0]] = kv[1]
		}
		ct.create = append(ct.create, tc)
	}
	if len(absent) > 0 {
		ct.status = &streamsStatus{streamsStatusMissingInternalTopics, "Internal topics are missing: " + strings.Join(absent, ", ")}
	}
	return ct, nil
}

// enforceCopartitioning is Kafka's CopartitionedTopicsEnforcer: the topics
// of a copartition group must have one partition count; the repartition
// topics the coordinator sizes take it, or their largest count when the
// group has no other topic.
func enforceCopartitioning(t *streamsTopology, meta map[string]TopicMeta, decided map[string]int32, count func(string) (int32, bool)) *streamsStatus {
	flexible := map[string]bool{}
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.partitions == 0 {
				flexible[r.name] = true
			}
		}
	}
	for _, s := range t.subs {
		for _, g := range s.copartition {
			var fixed, flex []string
			for _, i := range g.SourceTopics {
				fixed = append(fixed, s.sources[i])
			}
			for _, i := range g.RepartitionSourceTopics {
				name := s.repartitionSources[i].name
				if flexible[name] {
					flex = append(flex, name)
				} else {
					fixed = append(fixed, name)
				}
			}
			slices.Sort(fixed)
			var n int32 = -1
			for _, name := range fixed {
				c, _ := count(name)
				if n >= 0 && c != n {
					var parts []string
					for _, f := range fixed {
						c, _ := count(f)
						parts = append(parts, fmt.Sprintf("%s=%d", f, c))
					}
					return &streamsStatus{streamsStatusIncorrectlyPartitioned,
						"Following topics do not have the same number of partitions: [" + strings.Join(parts, ", ") + "]"}
				}
				n = c
			}
			if n < 0 {
				for _, name := range flex {
					n = max(n, decided[name])
				}
			}
			for _, name := range flex {
				decided[name] = n
			}
		}
	}
	return nil
}

// topicsHash is what a configured topology depends on: the partition
// counts of the topics that exist among those the topology names (or
// matches by regex).
func (t *streamsTopology) topicsHash(meta map[string]TopicMeta) string {
	names := map[string]bool{}
	for _, s := range t.subs {
		for _, n := range s.resolvedSources(meta) {
			names[n] = true
		}
		for _, r := range s.repartitionSources {
			names[r.name] = true
		}
		for _, c := range s.changelogs {
			names[c.name] = true
		}
	}
	var sb strings.Builder
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if m, ok := meta[n]; ok {
			fmt.Fprintf(&sb, "%s:%x:%d;", n, m.ID, m.Partitions)
		}
	}
	return sb.String()
}

// taskID is one task: a subtopology and a partition of its inputs.
type taskID struct {
	sub  string
	part int32
}

func compareTask(a, b taskID) int {
	return cmp.Or(strings.Compare(a.sub, b.sub), cmp.Compare(a.part, b.part))
}

// allTasks are the tasks of a ready topology, sorted.
func (ct *configuredTopology) allTasks() []taskID {
	var out []taskID
	for _, sub := range slices.Sorted(maps.Keys(ct.tasks)) {
		for p := range ct.tasks[sub] {
			out = append(out, taskID{sub, p})
		}
	}
	return out
}
