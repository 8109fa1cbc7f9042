package groups

// The __consumer_offsets records of KIP-848 consumer groups, in the
// schemas of Kafka's group coordinator (group-coordinator's
// ConsumerGroup*Key/Value.json; kmsg has none of them). A key is its
// record type (int16) and then the key's fields, not flexible; a value is
// its version (int16, 0) and then the fields, flexible (compact strings
// and arrays, tagged fields):
//
//	3 ConsumerGroupMetadata            group            -> epoch (tag 0: metadata hash)
//	5 ConsumerGroupMemberMetadata      group, member    -> instance, rack, client id and host,
//	                                                       subscribed names and regex, rebalance timeout, assignor
//	6 ConsumerGroupTargetAssignmentMetadata group       -> assignment epoch
//	7 ConsumerGroupTargetAssignmentMember   group, member -> target partitions by topic id
//	8 ConsumerGroupCurrentMemberAssignment  group, member -> member epoch, previous epoch, state,
//	                                                       assigned and pending-revocation partitions
//	                                                       (tag 0 of each topic: the epoch each
//	                                                       partition was assigned at, KIP-1251)
//
// A change is written as the records whose value changed since the last
// write (the coordinator keeps what it wrote), a removed member as
// tombstones of its three records, so a coordinator that loads the
// partition rebuilds the group with its epochs and assignments.

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kbin"
)

const (
	recConsumerGroupMetadata    = 3
	recConsumerMemberMetadata   = 5
	recConsumerTargetMetadata   = 6
	recConsumerTargetMember     = 7
	recConsumerCurrentAssigment = 8
)

var consumerSchema = stateSchema{what: "consumer group",
	types: []int16{recConsumerGroupMetadata, recConsumerMemberMetadata, recConsumerTargetMetadata,
		recConsumerTargetMember, recConsumerCurrentAssigment},
	memberTypes: []int16{recConsumerMemberMetadata, recConsumerTargetMember, recConsumerCurrentAssigment},
	ignored:     4, // ConsumerGroupPartitionMetadata, deprecated since Kafka 4.1
	groupMeta:   recConsumerGroupMetadata,
	memberMeta:  recConsumerMemberMetadata, targetMember: recConsumerTargetMember,
}

func appendNoTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func appendTopicPartitions(b []byte, ps []topicPartition, epochs partitionSet, ids map[string][16]byte) []byte {
	type topicParts struct {
		id               [16]byte
		parts, epochList []int32
	}
	var ts []topicParts
	for _, tp := range ps {
		id, ok := ids[tp.topic]
		if !ok {
			continue
		}
		if n := len(ts); n == 0 || ts[n-1].id != id {
			ts = append(ts, topicParts{id: id})
		}
		t := &ts[len(ts)-1]
		t.parts = append(t.parts, tp.partition)
		t.epochList = append(t.epochList, epochs[tp])
	}
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for _, t := range ts {
		b = kbin.AppendUuid(b, t.id)
		b = kbin.AppendCompactArrayLen(b, len(t.parts))
		for _, p := range t.parts {
			b = kbin.AppendInt32(b, p)
		}
		if epochs == nil {
			b = appendNoTags(b)
			continue
		}
		var tag []byte
		tag = kbin.AppendCompactArrayLen(tag, len(t.epochList))
		for _, e := range t.epochList {
			tag = kbin.AppendInt32(tag, e)
		}
		b = kbin.AppendUvarint(b, 1) // one tagged field
		b = kbin.AppendUvarint(b, 0) // tag 0: AssignmentEpochs
		b = kbin.AppendUvarint(b, uint32(len(tag)))
		b = append(b, tag...)
	}
	return b
}

// consumerRecordsNow encodes the group's consumer state as records: key
// (as a string, for the written map) -> value.
func (cg *consumerGroup) consumerRecordsNow() stateRecords {
	ids := map[string][16]byte{}
	for _, t := range cg.s.c.cfg.Topics() {
		ids[t.Name] = t.ID
	}
	out := stateRecords{}
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, cg.epoch)
	out[string(consumerSchema.key(recConsumerGroupMetadata, cg.id, ""))] = appendNoTags(v)
	v = kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, cg.assignmentEpoch)
	out[string(consumerSchema.key(recConsumerTargetMetadata, cg.id, ""))] = appendNoTags(v)
	for id, m := range cg.members {
		v := kbin.AppendInt16(nil, 0)
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.instanceID))
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.rack))
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.topics))
		for _, t := range m.topics {
			v = kbin.AppendCompactString(v, t)
		}
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.regex))
		v = kbin.AppendInt32(v, int32(m.rebalanceTimeout.Milliseconds()))
		v = kbin.AppendCompactNullableString(v, nonEmpty(m.assignor))
		out[string(consumerSchema.key(recConsumerMemberMetadata, cg.id, id))] = appendClassicTag(v, m.classic)

		v = kbin.AppendInt16(nil, 0)
		v = appendTopicPartitions(v, cg.target[id], nil, ids)
		out[string(consumerSchema.key(recConsumerTargetMember, cg.id, id))] = appendNoTags(v)

		epoch := m.epoch
		if m.leftStatic {
			epoch = m.leftEpoch
		}
		v = kbin.AppendInt16(nil, 0)
		v = kbin.AppendInt32(v, epoch)
		v = kbin.AppendInt32(v, m.prevEpoch)
		v = kbin.AppendInt8(v, int8(m.state))
		v = appendTopicPartitions(v, m.assigned.sorted(), m.assigned, ids)
		v = appendTopicPartitions(v, m.revoking.sorted(), m.revoking, ids)
		out[string(consumerSchema.key(recConsumerCurrentAssigment, cg.id, id))] = appendNoTags(v)
	}
	return out
}

// appendClassicTag ends a member metadata value with its tagged fields:
// tag 0, ClassicMemberMetadata (a nullable struct: a presence byte, the
// session timeout and the supported protocols), for a classic member.
func appendClassicTag(b []byte, ci *classicInfo) []byte {
	if ci == nil {
		return appendNoTags(b)
	}
	t := kbin.AppendInt8(nil, 1)
	t = kbin.AppendInt32(t, int32(ci.session.Milliseconds()))
	t = kbin.AppendCompactArrayLen(t, len(ci.protocols))
	for _, p := range ci.protocols {
		t = kbin.AppendCompactString(t, p.name)
		t = kbin.AppendCompactBytes(t, p.metadata)
		t = appendNoTags(t)
	}
	t = appendNoTags(t)
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, 0)
	b = kbin.AppendUvarint(b, uint32(len(t)))
	return append(b, t...)
}

// readClassicTag reads what appendClassicTag wrote; nil without tag 0.
func readClassicTag(r *kbin.Reader) *classicInfo {
	var ci *classicInfo
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		tag, size := r.Uvarint(), r.Uvarint()
		span := r.Span(int(size))
		if tag != 0 {
			continue
		}
		tr := kbin.Reader{Src: span}
		if tr.Int8() < 0 {
			continue
		}
		c := &classicInfo{session: ms(tr.Int32())}
		for np := tr.CompactArrayLen(); np > 0 && tr.Ok(); np-- {
			c.protocols = append(c.protocols, protocol{name: tr.CompactString(), metadata: bytes.Clone(tr.CompactBytes())})
			for nt := tr.Uvarint(); nt > 0 && tr.Ok(); nt-- {
				tr.Uvarint()
				tr.Span(int(tr.Uvarint()))
			}
		}
		if tr.Ok() && len(c.protocols) > 0 {
			ci = c
		}
	}
	return ci
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// persistConsumer writes what changed since the last write (removed
// members as tombstones, before the group's epoch record); done (may be
// nil) gets the result. The caller holds the shard's mu.
func (cg *consumerGroup) persistConsumer(done func(error)) {
	cg.persistState(cg.written.changed(cg.consumerRecordsNow()), "consumer group", done)
}

// loadConsumerRecord applies one record of a consumer group read from the
// log; errNotKindRecord for any other record.
func loadConsumerRecord(l *loader, key, value []byte) error {
	mk := func(c *groupCore) *consumerGroup { return newConsumerGroup(c, l.start) }
	return loadState(l, &consumerSchema, key, value, mk, (*consumerGroup).apply)
}

func (cg *consumerGroup) forget(k stateKey) { forgetMember(&consumerSchema, k, cg.members, cg.target) }

// apply reads the value of a consumer group record of key k into cg.
func (cg *consumerGroup) apply(k stateKey, r *kbin.Reader) error {
	m := cg.members[k.member]
	if k.member != "" && m == nil {
		m = &consumerMember{id: k.member, assigned: partitionSet{}, revoking: partitionSet{}}
		cg.members[k.member] = m
	}
	switch k.typ {
	case recConsumerGroupMetadata:
		cg.epoch = r.Int32()
	case recConsumerTargetMetadata:
		cg.assignmentEpoch = r.Int32()
	case recConsumerMemberMetadata:
		m.instanceID = deref(r.CompactNullableString())
		m.rack = deref(r.CompactNullableString())
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		n := r.CompactArrayLen()
		m.topics = nil
		for i := int32(0); i < n && r.Ok(); i++ {
			m.topics = append(m.topics, r.CompactString())
		}
		m.regex = deref(r.CompactNullableString())
		m.re = nil
		if m.regex != "" {
			m.re, _ = compileSubscription(m.regex)
		}
		m.rebalanceTimeout = ms(r.Int32())
		m.assignor = deref(r.CompactNullableString())
		m.classic = readClassicTag(r)
		if m.instanceID != "" {
			cg.static[m.instanceID] = k.member
		}
	case recConsumerTargetMember:
		cg.target[k.member] = readTopicPartitions(r, cg.s.c.topicNames(), nil)
	case recConsumerCurrentAssigment:
		m.epoch, m.prevEpoch = r.Int32(), r.Int32()
		m.state = reconcileState(r.Int8())
		m.assigned, m.revoking = partitionSet{}, partitionSet{}
		names := cg.s.c.topicNames()
		readTopicPartitions(r, names, m.assigned)
		readTopicPartitions(r, names, m.revoking)
	}
	return r.Complete()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readTopicPartitions reads a []TopicPartitions; into, when set, gets
// each partition with its assignment epoch (tag 0). Topics this broker
// does not know (deleted since) are skipped.
func readTopicPartitions(r *kbin.Reader, names map[[16]byte]string, into partitionSet) []topicPartition {
	var out []topicPartition
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		id := r.Uuid()
		np := r.CompactArrayLen()
		var parts []int32
		for j := int32(0); j < np && r.Ok(); j++ {
			parts = append(parts, r.Int32())
		}
		var epochs []int32
		for nt := r.Uvarint(); nt > 0 && r.Ok(); nt-- {
			tag, size := r.Uvarint(), r.Uvarint()
			span := r.Span(int(size))
			if tag == 0 {
				tr := kbin.Reader{Src: span}
				ne := tr.CompactArrayLen()
				for k := int32(0); k < ne && tr.Ok(); k++ {
					epochs = append(epochs, tr.Int32())
				}
			}
		}
		name, ok := names[id]
		if !ok {
			continue
		}
		for j, p := range parts {
			tp := topicPartition{name, p}
			out = append(out, tp)
			if into != nil {
				e := int32(0)
				if j < len(epochs) {
					e = epochs[j]
				}
				into[tp] = e
			}
		}
	}
	return out
}

func (c *Coordinator) topicNames() map[[16]byte]string {
	names := map[[16]byte]string{}
	for _, t := range c.cfg.Topics() {
		names[t.ID] = t.Name
	}
	return names
}

// afterLoad resumes a consumer group read from the log: who owns which
// partition, the members' session timers (they must heartbeat again
// within their session timeout, as after a coordinator move in Kafka),
// and whether it has members.
func (cg *consumerGroup) afterLoad() {
	for id, m := range cg.members {
		for tp := range m.assigned {
			cg.owner[tp] = id
		}
		for tp := range m.revoking {
			cg.owner[tp] = id
		}
		cg.scheduleConsumerTimers(m)
	}
	cg.metaHash = metaHash(cg.subscribedTopicMeta())
	cg.setConsumerState()
}
