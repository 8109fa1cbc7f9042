package groups

// The __consumer_offsets records of KIP-932 share groups, in the schemas
// of Kafka 4.4's group coordinator (ShareGroup*Key/Value.json), encoded as
// the consumer-group records are (consumer_records.go):
//
//	11 ShareGroupMetadata                    group          -> epoch, metadata hash
//	10 ShareGroupMemberMetadata              group, member  -> rack, client id and host, subscribed names
//	12 ShareGroupTargetAssignmentMetadata    group          -> assignment epoch
//	13 ShareGroupTargetAssignmentMember      group, member  -> target partitions by topic id
//	14 ShareGroupCurrentMemberAssignment     group, member  -> member epoch, previous epoch, state,
//	                                                           assigned partitions
//	15 ShareGroupStatePartitionMetadata      group          -> initializing, initialized and deleting
//	                                                           topics (id, name, partitions)
//
// As for consumer groups, a change writes the records whose value changed
// and tombstones for those gone, before the heartbeat is answered, so a
// coordinator that loads the partition has the group with its epochs,
// members and assignments: its members go on heartbeating instead of
// rejoining. The initialized partitions are those the group has ever been
// assigned (their share-partitions have state), which the share admin APIs
// list and DeleteGroups deletes.

import (
	"hash/fnv"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

const (
	recShareMemberMetadata   = 10
	recShareGroupMetadata    = 11
	recShareTargetMetadata   = 12
	recShareTargetMember     = 13
	recShareCurrentAssigment = 14
	recShareStatePartitions  = 15
)

var shareSchema = stateSchema{what: "share group",
	types: []int16{recShareMemberMetadata, recShareGroupMetadata, recShareTargetMetadata,
		recShareTargetMember, recShareCurrentAssigment, recShareStatePartitions},
	memberTypes: []int16{recShareMemberMetadata, recShareTargetMember, recShareCurrentAssigment},
	groupMeta:   recShareGroupMetadata,
	memberMeta:  recShareMemberMetadata, targetMember: recShareTargetMember,
}

// metaHash64 is the int64 ShareGroupMetadata keeps of the group's topic
// metadata hash.
func metaHash64(h string) int64 {
	f := fnv.New64a()
	f.Write([]byte(h))
	return int64(f.Sum64())
}

// shareRecordsNow encodes the group's share state as records: key (as a
// string) -> value.
func (sg *shareGroup) shareRecordsNow() map[string][]byte {
	ids := map[string][16]byte{}
	for _, t := range sg.s.c.cfg.Topics() {
		ids[t.Name] = t.ID
	}
	out := map[string][]byte{}
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, sg.epoch)
	v = kbin.AppendInt64(v, metaHash64(sg.metaHash))
	out[string(shareSchema.key(recShareGroupMetadata, sg.id, ""))] = appendNoTags(v)
	v = kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, sg.assignmentEpoch)
	out[string(shareSchema.key(recShareTargetMetadata, sg.id, ""))] = appendNoTags(v)
	v = kbin.AppendInt16(nil, 0)
	v = appendTopicPartitionsInfo(v, nil, ids)
	v = appendTopicPartitionsInfo(v, slices.SortedFunc(maps.Keys(sg.initialized), compareTP), ids)
	v = kbin.AppendCompactArrayLen(v, 0) // deleting topics
	out[string(shareSchema.key(recShareStatePartitions, sg.id, ""))] = appendNoTags(v)
	for id, m := range sg.members {
		v := kbin.AppendInt16(nil, 0)
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.rack))
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.topics))
		for _, t := range m.topics {
			v = kbin.AppendCompactString(v, t)
		}
		out[string(shareSchema.key(recShareMemberMetadata, sg.id, id))] = appendNoTags(v)

		v = kbin.AppendInt16(nil, 0)
		v = appendTopicPartitions(v, sg.target[id], nil, ids)
		out[string(shareSchema.key(recShareTargetMember, sg.id, id))] = appendNoTags(v)

		v = kbin.AppendInt16(nil, 0)
		v = kbin.AppendInt32(v, m.epoch)
		v = kbin.AppendInt32(v, m.previousEpoch)
		v = kbin.AppendInt8(v, int8(memberStable))
		v = appendTopicPartitions(v, m.assigned, nil, ids)
		out[string(shareSchema.key(recShareCurrentAssigment, sg.id, id))] = appendNoTags(v)
	}
	return out
}

// appendTopicPartitionsInfo appends a []TopicPartitionsInfo: topic id,
// name and partitions, for the sorted ps of topics known here.
func appendTopicPartitionsInfo(b []byte, ps []topicPartition, ids map[string][16]byte) []byte {
	var topics []string
	parts := map[string][]int32{}
	for _, tp := range ps {
		if _, ok := ids[tp.topic]; !ok {
			continue
		}
		if len(parts[tp.topic]) == 0 {
			topics = append(topics, tp.topic)
		}
		parts[tp.topic] = append(parts[tp.topic], tp.partition)
	}
	b = kbin.AppendCompactArrayLen(b, len(topics))
	for _, t := range topics {
		b = kbin.AppendUuid(b, ids[t])
		b = kbin.AppendCompactString(b, t)
		b = kbin.AppendCompactArrayLen(b, len(parts[t]))
		for _, p := range parts[t] {
			b = kbin.AppendInt32(b, p)
		}
		b = appendNoTags(b)
	}
	return b
}

// readTopicPartitionsInfo reads what appendTopicPartitionsInfo wrote into
// set; a topic not known here by id is skipped.
func readTopicPartitionsInfo(r *kbin.Reader, names map[[16]byte]string, set map[topicPartition]bool) {
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		id := r.Uuid()
		r.CompactString()
		np := r.CompactArrayLen()
		var ps []int32
		for j := int32(0); j < np && r.Ok(); j++ {
			ps = append(ps, r.Int32())
		}
		skipTags(r)
		if name, ok := names[id]; ok && set != nil {
			for _, p := range ps {
				set[topicPartition{name, p}] = true
			}
		}
	}
}

func skipTags(r *kbin.Reader) {
	for nt := r.Uvarint(); nt > 0 && r.Ok(); nt-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// persistShare writes what changed of the group's share state; done (may
// be nil) gets the result. The caller holds the shard's mu.
func (sg *shareGroup) persistShare(done func(error)) {
	sg.persistState(sg.written.changed(sg.shareRecordsNow()), "share group", done)
}

// loadShareRecord applies one record of a share group read from the log;
// errNotKindRecord for any other record.
func loadShareRecord(l *loader, key, value []byte) error {
	return loadState(l, &shareSchema, key, value, newShareGroup, (*shareGroup).apply)
}

func (sg *shareGroup) forget(k stateKey) { forgetMember(&shareSchema, k, sg.members, sg.target) }

// apply reads the value of a share group record of key k into sg.
func (sg *shareGroup) apply(k stateKey, r *kbin.Reader) error {
	m := sg.members[k.member]
	if k.member != "" && m == nil {
		m = &shareMember{id: k.member}
		sg.members[k.member] = m
	}
	names := sg.s.c.topicNames()
	switch k.typ {
	case recShareGroupMetadata:
		sg.epoch = r.Int32()
		sg.loadedHash = r.Int64()
	case recShareTargetMetadata:
		sg.assignmentEpoch = r.Int32()
	case recShareStatePartitions:
		readTopicPartitionsInfo(r, names, nil) // initializing: none are written
		sg.initialized = map[topicPartition]bool{}
		readTopicPartitionsInfo(r, names, sg.initialized)
		for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- { // deleting
			r.Uuid()
			r.CompactString()
			skipTags(r)
		}
	case recShareMemberMetadata:
		m.rack = deref(r.CompactNullableString())
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		m.topics = nil
		for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
			m.topics = append(m.topics, r.CompactString())
		}
	case recShareTargetMember:
		sg.target[k.member] = readTopicPartitions(r, names, nil)
	case recShareCurrentAssigment:
		m.epoch, m.previousEpoch = r.Int32(), r.Int32()
		r.Int8() // state: always stable
		m.assigned = readTopicPartitions(r, names, nil)
	}
	skipTags(r)
	return r.Complete()
}

// afterLoad resumes a share group read from the log: its members
// must heartbeat within the session timeout, and a topic metadata change
// made while the group had no coordinator gives it a new target.
func (sg *shareGroup) afterLoad() {
	for _, m := range sg.members {
		sg.scheduleShareTimer(m)
	}
	if h := metaHash(sg.s.c.shareSubscribed(sg)); metaHash64(h) == sg.loadedHash {
		sg.metaHash = h
	}
}
