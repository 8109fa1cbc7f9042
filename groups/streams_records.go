package groups

// The __consumer_offsets records of KIP-1071 streams groups, in the
// schemas of Kafka 4.4's group coordinator (StreamsGroup*Key/Value; kmsg
// has none of them). A key is its record type (int16) and then the key's
// fields, not flexible; a value is its version (int16, 0) and then the
// fields, flexible (compact strings and arrays, tagged fields):
//
//	17 StreamsGroupMetadata             group         -> epoch, metadata hash
//	                                                     (tag 0: validated topology epoch)
//	19 StreamsGroupMemberMetadata       group, member -> instance, rack, client id and host,
//	                                                     rebalance timeout, topology epoch, process id,
//	                                                     user endpoint, client tags
//	20 StreamsGroupTargetAssignmentMetadata group     -> assignment epoch
//	21 StreamsGroupTargetAssignmentMember   group, member -> target active, standby, warm-up tasks
//	22 StreamsGroupCurrentMemberAssignment  group, member -> member epoch, previous epoch, state
//	                                                     (1 stable, 2 unrevoked, 3 unreleased), the tasks
//	                                                     assigned and pending revocation by role (tag 0 of
//	                                                     each active entry: the epochs they were assigned at)
//	23 StreamsGroupTopology             group         -> topology epoch, subtopologies
//
// As for consumer groups, a change is written as the records whose value
// changed since the last write, a removed member as tombstones of its
// three records, and the heartbeat is answered once they are in the log,
// so a coordinator that loads the partition knows the group again.

import (
	"hash/fnv"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	recStreamsGroupMetadata     = 17
	recStreamsMemberMetadata    = 19
	recStreamsTargetMetadata    = 20
	recStreamsTargetMember      = 21
	recStreamsCurrentAssignment = 22
	recStreamsTopology          = 23
)

var streamsSchema = stateSchema{what: "streams group",
	types: []int16{recStreamsGroupMetadata, recStreamsMemberMetadata, recStreamsTargetMetadata,
		recStreamsTargetMember, recStreamsCurrentAssignment, recStreamsTopology},
	memberTypes: []int16{recStreamsMemberMetadata, recStreamsTargetMember, recStreamsCurrentAssignment},
	ignored:     18, // StreamsGroupPartitionMetadata, which Kafka 4.4 no longer writes
	groupMeta:   recStreamsGroupMetadata,
	memberMeta:  recStreamsMemberMetadata, targetMember: recStreamsTargetMember,
}

// appendTaggedInt appends a tagged-field section of one field, tag, whose
// value is v.
func appendTagged(b []byte, tag uint32, v []byte) []byte {
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, tag)
	b = kbin.AppendUvarint(b, uint32(len(v)))
	return append(b, v...)
}

// appendTaskIDs appends a []TaskIds; with epochs, each entry carries the
// epochs of its partitions as tag 0 (AssignmentEpochs).
func appendTaskIDs(b []byte, tasks []taskID, epochs map[taskID]int32) []byte {
	ids := taskIDsOf(tasks)
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, t := range ids {
		b = kbin.AppendCompactString(b, t.SubtopologyID)
		b = kbin.AppendCompactArrayLen(b, len(t.Partitions))
		for _, p := range t.Partitions {
			b = kbin.AppendInt32(b, p)
		}
		if epochs == nil {
			b = appendNoTags(b)
			continue
		}
		tag := kbin.AppendCompactArrayLen(nil, len(t.Partitions))
		for _, p := range t.Partitions {
			tag = kbin.AppendInt32(tag, epochs[taskID{t.SubtopologyID, p}])
		}
		b = appendTagged(b, 0, tag)
	}
	return b
}

// readTaskIDs reads what appendTaskIDs wrote into into, with the epochs of
// tag 0 when there are (0 otherwise).
func readTaskIDs[V int32 | bool](r *kbin.Reader, into map[taskID]V, epoch func(int32) V) {
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		sub := r.CompactString()
		var parts []int32
		for np := r.CompactArrayLen(); np > 0 && r.Ok(); np-- {
			parts = append(parts, r.Int32())
		}
		var epochs []int32
		for nt := r.Uvarint(); nt > 0 && r.Ok(); nt-- {
			tag, size := r.Uvarint(), r.Uvarint()
			span := r.Span(int(size))
			if tag == 0 {
				tr := kbin.Reader{Src: span}
				for ne := tr.CompactArrayLen(); ne > 0 && tr.Ok(); ne-- {
					epochs = append(epochs, tr.Int32())
				}
			}
		}
		for i, p := range parts {
			e := int32(0)
			if i < len(epochs) {
				e = epochs[i]
			}
			into[taskID{sub, p}] = epoch(e)
		}
	}
}

func appendTopicInfos(b []byte, ts []streamsTopic) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for _, t := range ts {
		b = kbin.AppendCompactString(b, t.name)
		b = kbin.AppendInt32(b, t.partitions)
		b = kbin.AppendInt16(b, t.rf)
		b = kbin.AppendCompactArrayLen(b, len(t.configs))
		for _, kv := range t.configs {
			b = kbin.AppendCompactString(b, kv[0])
			b = kbin.AppendCompactString(b, kv[1])
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return b
}

func readTopicInfos(r *kbin.Reader) []streamsTopic {
	var out []streamsTopic
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		t := streamsTopic{name: r.CompactString(), partitions: r.Int32(), rf: r.Int16()}
		for nc := r.CompactArrayLen(); nc > 0 && r.Ok(); nc-- {
			t.configs = append(t.configs, [2]string{r.CompactString(), r.CompactString()})
			skipTags(r)
		}
		skipTags(r)
		out = append(out, t)
	}
	return out
}

// appendArray appends a compact array of xs, each appended by f.
func appendArray[T any](b []byte, xs []T, f func([]byte, T) []byte) []byte {
	b = kbin.AppendCompactArrayLen(b, len(xs))
	for _, x := range xs {
		b = f(b, x)
	}
	return b
}

// readArray reads a compact array, each element by f (empty for null).
func readArray[T any](r *kbin.Reader, f func() T) []T {
	out := []T{}
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		out = append(out, f())
	}
	return out
}

func appendTopology(b []byte, t *streamsTopology) []byte {
	b = kbin.AppendInt32(b, t.epoch)
	b = kbin.AppendCompactArrayLen(b, len(t.subs))
	for _, s := range t.subs {
		b = kbin.AppendCompactString(b, s.id)
		b = appendArray(b, s.sources, kbin.AppendCompactString)
		b = appendArray(b, s.sourceRegex, kbin.AppendCompactString)
		b = appendTopicInfos(b, s.changelogs)
		b = appendArray(b, s.repartitionSinks, kbin.AppendCompactString)
		b = appendTopicInfos(b, s.repartitionSources)
		b = kbin.AppendCompactArrayLen(b, len(s.copartition))
		for _, g := range s.copartition {
			b = appendArray(b, g.SourceTopics, kbin.AppendInt16)
			b = appendArray(b, g.SourceTopicRegex, kbin.AppendInt16)
			b = appendArray(b, g.RepartitionSourceTopics, kbin.AppendInt16)
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

type copartitionGroup = kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup

func kmsgEndpoint(host string, port uint16) kmsg.Endpoint {
	e := kmsg.NewEndpoint()
	e.Host, e.Port = host, port
	return e
}

func readTopology(r *kbin.Reader) *streamsTopology {
	t := &streamsTopology{epoch: r.Int32()}
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		s := subtopology{id: r.CompactString(), sources: readArray(r, r.CompactString), sourceRegex: readArray(r, r.CompactString),
			changelogs: readTopicInfos(r), repartitionSinks: readArray(r, r.CompactString), repartitionSources: readTopicInfos(r)}
		for nc := r.CompactArrayLen(); nc > 0 && r.Ok(); nc-- {
			var g copartitionGroup
			g.SourceTopics, g.SourceTopicRegex, g.RepartitionSourceTopics = readArray(r, r.Int16), readArray(r, r.Int16), readArray(r, r.Int16)
			skipTags(r)
			s.copartition = append(s.copartition, g)
		}
		skipTags(r)
		t.subs = append(t.subs, s)
	}
	skipTags(r)
	return t
}

// metadataHash is the group's metadata hash as the record carries it: a
// hash of what the configured topology was computed from.
func (sg *streamsGroup) metadataHash() int64 {
	if sg.topicsHash == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(sg.topicsHash))
	return int64(h.Sum64())
}

// streamsRecordsNow encodes the group's streams state as records: key (as
// a string, for the written map) -> value.
func (sg *streamsGroup) streamsRecordsNow() stateRecords {
	out := stateRecords{}
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, sg.epoch)
	v = kbin.AppendInt64(v, sg.metadataHash())
	if sg.validatedEpoch != -1 {
		v = appendTagged(v, 0, kbin.AppendInt32(nil, sg.validatedEpoch))
	} else {
		v = appendNoTags(v)
	}
	out[string(streamsSchema.key(recStreamsGroupMetadata, sg.id, ""))] = v
	v = kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, sg.assignmentEpoch)
	out[string(streamsSchema.key(recStreamsTargetMetadata, sg.id, ""))] = appendNoTags(v)
	if sg.topology != nil {
		out[string(streamsSchema.key(recStreamsTopology, sg.id, ""))] = appendTopology(kbin.AppendInt16(nil, 0), sg.topology)
	}
	for id, m := range sg.members {
		v := kbin.AppendInt16(nil, 0)
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.instanceID))
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.rack))
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendInt32(v, int32(m.rebalanceTimeout.Milliseconds()))
		v = kbin.AppendInt32(v, m.topologyEpoch)
		v = kbin.AppendCompactString(v, m.processID)
		if m.endpoint == nil {
			v = kbin.AppendInt8(v, -1)
		} else {
			v = kbin.AppendInt8(v, 1)
			v = kbin.AppendCompactString(v, m.endpoint.Host)
			v = kbin.AppendUint16(v, m.endpoint.Port)
			v = appendNoTags(v)
		}
		v = kbin.AppendCompactArrayLen(v, len(m.clientTags))
		for _, k := range slices.Sorted(maps.Keys(m.clientTags)) {
			v = kbin.AppendCompactString(v, k)
			v = kbin.AppendCompactString(v, m.clientTags[k])
			v = appendNoTags(v)
		}
		out[string(streamsSchema.key(recStreamsMemberMetadata, sg.id, id))] = appendNoTags(v)

		target := sg.target[id]
		v = kbin.AppendInt16(nil, 0)
		v = appendTaskIDs(v, sortedTasks(target.active), nil)
		v = appendTaskIDs(v, sortedTasks(target.standby), nil)
		v = appendTaskIDs(v, sortedTasks(target.warmup), nil)
		out[string(streamsSchema.key(recStreamsTargetMember, sg.id, id))] = appendNoTags(v)

		v = kbin.AppendInt16(nil, 0)
		v = kbin.AppendInt32(v, m.epoch)
		if m.leftStatic {
			v = kbin.AppendInt32(v, m.leftEpoch) // read back as such
		} else {
			v = kbin.AppendInt32(v, m.prevEpoch)
		}
		v = kbin.AppendInt8(v, int8(m.state)+1)
		v = appendTaskIDs(v, sortedTasks(m.assigned.active), m.assigned.active)
		v = appendTaskIDs(v, sortedTasks(m.assigned.standby), nil)
		v = appendTaskIDs(v, sortedTasks(m.assigned.warmup), nil)
		v = appendTaskIDs(v, sortedTasks(m.revoking.active), m.revoking.active)
		v = appendTaskIDs(v, sortedTasks(m.revoking.standby), nil)
		v = appendTaskIDs(v, sortedTasks(m.revoking.warmup), nil)
		out[string(streamsSchema.key(recStreamsCurrentAssignment, sg.id, id))] = appendNoTags(v)
	}
	return out
}

// persistStreams writes what changed since the last write (removed
// members as tombstones first); done (may be nil) gets the result. The
// caller holds the shard's mu.
func (sg *streamsGroup) persistStreams(done func(error)) {
	sg.persistState(sg.written.changed(sg.streamsRecordsNow()), "streams group", done)
}

// loadStreamsRecord applies one record of a streams group read from the
// log; errNotKindRecord for any other record.
func loadStreamsRecord(l *loader, key, value []byte) error {
	mk := func(c *groupCore) *streamsGroup { return newStreamsGroup(c, l.start) }
	return loadState(l, &streamsSchema, key, value, mk, (*streamsGroup).apply)
}

func (sg *streamsGroup) forget(k stateKey) { forgetMember(&streamsSchema, k, sg.members, sg.target) }

// apply reads the value of a streams group record of key k into sg.
func (sg *streamsGroup) apply(k stateKey, r *kbin.Reader) error {
	m := sg.members[k.member]
	if k.member != "" && m == nil {
		m = &streamsMember{id: k.member, assigned: newStreamsTasks(), revoking: newStreamsTasks(), owned: newStreamsTasks()}
		sg.members[k.member] = m
	}
	switch k.typ {
	case recStreamsGroupMetadata:
		sg.epoch = r.Int32()
		r.Int64() // the metadata hash: the topology is configured again after the load
		for nt := r.Uvarint(); nt > 0 && r.Ok(); nt-- {
			tag, size := r.Uvarint(), r.Uvarint()
			span := r.Span(int(size))
			if tag == 0 {
				tr := kbin.Reader{Src: span}
				sg.validatedEpoch = tr.Int32()
			}
		}
	case recStreamsTargetMetadata:
		sg.assignmentEpoch = r.Int32()
		skipTags(r)
	case recStreamsTopology:
		sg.topology = readTopology(r)
	case recStreamsMemberMetadata:
		m.instanceID = deref(r.CompactNullableString())
		if m.instanceID != "" {
			sg.static[m.instanceID] = k.member
		}
		m.rack = deref(r.CompactNullableString())
		m.clientID, m.clientHost = r.CompactString(), r.CompactString()
		m.rebalanceTimeout = ms(r.Int32())
		m.topologyEpoch = r.Int32()
		m.processID = r.CompactString()
		m.endpoint = nil
		if r.Int8() >= 0 {
			e := kmsgEndpoint(r.CompactString(), r.Uint16())
			m.endpoint = &e
			skipTags(r)
		}
		m.clientTags = nil
		if n := r.CompactArrayLen(); n > 0 {
			m.clientTags = map[string]string{}
			for ; n > 0 && r.Ok(); n-- {
				k, v := r.CompactString(), r.CompactString()
				m.clientTags[k] = v
				skipTags(r)
			}
		}
		skipTags(r)
	case recStreamsTargetMember:
		t := newStreamsTasks()
		readTaskIDs(r, t.active, func(int32) int32 { return 0 })
		readTaskIDs(r, t.standby, func(int32) bool { return true })
		readTaskIDs(r, t.warmup, func(int32) bool { return true })
		skipTags(r)
		sg.target[k.member] = t
	case recStreamsCurrentAssignment:
		m.epoch, m.prevEpoch = r.Int32(), r.Int32()
		if m.leftStatic = m.epoch == epochStaticLeave; m.leftStatic {
			m.leftEpoch = m.prevEpoch
		}
		m.state = max(reconcileState(r.Int8()-1), memberStable)
		m.assigned, m.revoking = newStreamsTasks(), newStreamsTasks()
		keep := func(e int32) int32 { return e }
		yes := func(int32) bool { return true }
		readTaskIDs(r, m.assigned.active, keep)
		readTaskIDs(r, m.assigned.standby, yes)
		readTaskIDs(r, m.assigned.warmup, yes)
		readTaskIDs(r, m.revoking.active, keep)
		readTaskIDs(r, m.revoking.standby, yes)
		readTaskIDs(r, m.revoking.warmup, yes)
		skipTags(r)
	}
	return r.Complete()
}

// afterLoad resumes a streams group read from the log: who owns
// which active task, the topology configured against the topics now (the
// group epoch moves at the next heartbeat only if they changed), the
// members' session timers and whether it has members.
func (sg *streamsGroup) afterLoad() {
	for id, m := range sg.members {
		for t := range m.assigned.active {
			sg.activeOwner[t] = id
		}
		for t := range m.revoking.active {
			sg.activeOwner[t] = id
		}
		m.owned = m.assigned.clone()
		for t, e := range m.revoking.active {
			m.owned.active[t] = e
		}
		sg.scheduleStreamsTimers(m)
	}
	if sg.topology != nil {
		meta := sg.s.c.topicMeta()
		if ct, err := configureTopology(sg.topology, meta); err == nil {
			sg.configured, sg.topicsHash = ct, sg.topology.topicsHash(meta)
		}
	}
	sg.setStreamsState()
}
