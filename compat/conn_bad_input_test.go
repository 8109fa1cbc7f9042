package compat

// Bad input over raw connections (RELIABILITY.md §4): the Kafka error code,
// or a closed connection where Kafka closes it; never a crash, and the
// broker keeps serving well-behaved clients.

import (
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadInputOversizedFrame sends frame sizes far above
// socket.request.max.bytes. The broker must close without allocating a
// buffer of that size. It runs alone (not parallel) so the allocation
// counter sees only this broker.
func TestBadInputOversizedFrame(t *testing.T) {
	n := admBroker(t, nil)
	addr := n.Addr()
	for _, size := range []uint32{104857600 + 1, 1 << 30, 0x7fffffff} {
		c := admDial(t, addr)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		hdr := binary.BigEndian.AppendUint32(nil, size)
		// A plausible header follows, as a client that lies about the size would send.
		hdr = append(hdr, admHeader(int16(kmsg.ApiVersions), 0, 1, "x", false)...)
		c.writeRaw(hdr)
		c.expectClosed("frame size " + strconv.Itoa(int(size)))
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("frame size %d: %d MiB allocated while refusing it, want no allocation sized by the length field", size, grew>>20)
		}
	}
	// A frame just over a small configured limit is refused too.
	small := admBroker(t, map[string]string{"socket.request.max.bytes": "4096"})
	c := admDial(t, small.Addr())
	req := kmsg.NewPtrMetadataRequest()
	for range 400 {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("some-topic-name-that-pads")
		req.Topics = append(req.Topics, rt)
	}
	req.SetVersion(4)
	c.send(req)
	c.expectClosed("a 10 KB Metadata request with socket.request.max.bytes=4096")
	// And under it, the same broker answers.
	c = admDial(t, small.Addr())
	if resp := c.roundTrip(kmsg.NewPtrApiVersionsRequest(), 0).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Errorf("ApiVersions under the limit: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestBadInputFrames: malformed frames and headers close the connection, as
// Kafka's InvalidRequestException / InvalidReceiveException handling does.
func TestBadInputFrames(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	addr := n.Addr()

	cases := []struct {
		name  string
		bytes []byte
	}{
		{"negative frame size", binary.BigEndian.AppendUint32(nil, 0xffffffff)},
		{"frame size -2^31", binary.BigEndian.AppendUint32(nil, 0x80000000)},
		{"unknown api key 9999", admFrame(admHeader(9999, 0, 1, "x", false))},
		{"removed api key 4 (LeaderAndIsr)", admFrame(admHeader(4, 0, 1, "x", false))},
		{"api key -1", admFrame(admHeader(-1, 0, 1, "x", false))},
		{"empty frame", admFrame(nil)},
		{"truncated header (3 bytes)", admFrame([]byte{0, 18, 0})},
		{"header without correlation id", admFrame([]byte{0, 18, 0, 3, 0, 0})},
		{"client id longer than the frame", admFrame(append(binary.BigEndian.AppendUint32([]byte{0, 3, 0, 4}, 7), 0, 200, 'a'))},
		{"Produce v2 (refused version)", admFrame(append(admHeader(0, 2, 1, "x", false), admProduceBody(t, 2)...))},
		{"Produce v0", admFrame(append(admHeader(0, 0, 1, "x", false), admProduceBody(t, 0)...))},
		{"Produce v14 (above max)", admFrame(admHeader(0, 14, 1, "x", true))},
		{"Fetch v3 (refused version)", admFrame(admHeader(1, 3, 1, "x", false))},
		{"Metadata v14 (above max)", admFrame(admHeader(3, 14, 1, "x", true))},
		// Garbage Kafka's generated decoders refuse (a negative length of a
		// nullable array is null to Kafka, so these avoid that).
		{"Metadata with garbage body", admFrame(append(admHeader(3, 4, 1, "x", false), 0, 0, 0, 5, 0xff, 0xfe, 0xde, 0xad, 0xbe, 0xef))},
		{"Metadata array past the buffer", admFrame(append(admHeader(3, 4, 1, "x", false), 0x7f, 0xff, 0xff, 0xff))},
		{"Metadata v0 array length -5", admFrame(append(admHeader(3, 0, 1, "x", false), 0xff, 0xff, 0xff, 0xfb))},
		{"Metadata string past the buffer", admFrame(append(admHeader(3, 1, 1, "x", false), 0, 0, 0, 1, 0x7f, 0xff, 'a'))},
		{"flexible Metadata with a huge compact array", admFrame(append(admHeader(3, 12, 1, "x", true), binary.AppendUvarint(nil, 0x7ffffff0)...))},
		{"flexible Metadata with a truncated tag section", admFrame(append(admHeader(3, 12, 1, "x", true), 1, 0x05))},
		{"CreateTopics v1 (refused version)", admFrame(admHeader(19, 1, 1, "x", false))},
		{"OffsetForLeaderEpoch v1 (refused version)", admFrame(admHeader(23, 1, 1, "x", false))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := admDial(t, addr)
			c.writeRaw(tc.bytes)
			c.expectClosed(tc.name)
		})
	}

	// A request after a refused one on the same connection is never
	// answered: the first one closed it.
	t.Run("pipelined after refusal", func(t *testing.T) {
		c := admDial(t, addr)
		good := kmsg.NewPtrApiVersionsRequest()
		good.SetVersion(0)
		f := kmsg.NewRequestFormatter()
		c.writeRaw(append(admFrame(admHeader(9999, 0, 1, "x", false)), f.AppendRequest(nil, good, 2)...))
		c.expectClosed("unknown key followed by ApiVersions")
	})

	// After all of that the broker still serves a normal client.
	admBrokerStillServes(t, addr)
}

// admProduceBody is a Produce body at version v with one small batch.
func admProduceBody(t *testing.T, v int16) []byte {
	req := admProduceReq("whatever", 0, 1, admBatch(1, admRecord{value: []byte("x")}))
	req.SetVersion(v)
	return req.AppendTo(nil)
}

// admBrokerStillServes creates a topic, produces and consumes with kgo.
func admBrokerStillServes(t *testing.T, addr string) {
	t.Helper()
	adm, cl := admAdmin(t, addr)
	topic := admTopic("still-serving")
	admCreate(t, adm, topic, 1, 1, nil)
	admProduce(t, cl, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("still here")})
	got := admConsume(t, addr, topic, []int32{0}, 1)
	if string(got[0].Value) != "still here" || got[0].Offset != 0 {
		t.Errorf("after bad input: read %q at %d", got[0].Value, got[0].Offset)
	}
}

// TestBadInputApiVersions: the KIP-511 fallback and client-software checks.
func TestBadInputApiVersions(t *testing.T) {
	t.Parallel()
	n := admBroker(t, nil)
	addr := n.Addr()

	t.Run("v99", func(t *testing.T) {
		c := admDial(t, addr)
		// The body of a version we do not know is not parsed: send junk.
		corr := int32(4242)
		c.writeRaw(admFrame(append(admHeader(int16(kmsg.ApiVersions), 99, corr, "future-client", true), 0x05, 0xff, 0x13, 0x00)))
		resp := kmsg.NewPtrApiVersionsResponse()
		c.readResponse(corr, resp, 0)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ApiVersions v99: error %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(resp.ErrorCode))
		}
		found := false
		for _, k := range resp.ApiKeys {
			if k.ApiKey == int16(kmsg.ApiVersions) {
				found = true
				if k.MinVersion != 0 || k.MaxVersion != 5 {
					t.Errorf("ApiVersions v99 fallback: ApiVersions range %d-%d, want 0-5", k.MinVersion, k.MaxVersion)
				}
			}
		}
		if !found {
			t.Errorf("ApiVersions v99 fallback: key list %+v lacks ApiVersions", resp.ApiKeys)
		}
		// The connection stays usable: the client retries at v3.
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "future-client", "9.9"
		r3 := c.roundTrip(req, 3).(*kmsg.ApiVersionsResponse)
		if r3.ErrorCode != 0 {
			t.Fatalf("ApiVersions v3 after the fallback: %v", kerr.ErrorForCode(r3.ErrorCode))
		}
		admCheckApiKeys(t, "ApiVersions v3 after the fallback", r3.ApiKeys)
	})

	t.Run("v6", func(t *testing.T) {
		c := admDial(t, addr)
		corr := int32(77)
		c.writeRaw(admFrame(admHeader(int16(kmsg.ApiVersions), 6, corr, "x", true)))
		resp := kmsg.NewPtrApiVersionsResponse()
		c.readResponse(corr, resp, 0)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ApiVersions v6: error %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(resp.ErrorCode))
		}
	})

	for _, tc := range []struct {
		name, sw, ver string
		want          int16
	}{
		{"bad software name", "bad name!", "1.0", kerr.InvalidRequest.Code},
		{"bad software version", "client", "1.0 beta", kerr.InvalidRequest.Code},
		{"empty software name", "", "1.0", kerr.InvalidRequest.Code},
		{"name ending in a dot", "client.", "1.0", kerr.InvalidRequest.Code},
		{"good name with dots and dashes", "apache-kafka.java", "3.9.0-SNAPSHOT", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := admDial(t, addr)
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = tc.sw, tc.ver
			resp := c.roundTrip(req, 3).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != tc.want {
				t.Errorf("ApiVersions v3 name %q version %q: %v, want %v", tc.sw, tc.ver, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.want))
			}
			// The client (librdkafka) then retries at v0 on the same connection.
			r0 := c.roundTrip(kmsg.NewPtrApiVersionsRequest(), 0).(*kmsg.ApiVersionsResponse)
			if r0.ErrorCode != 0 || len(r0.ApiKeys) == 0 {
				t.Errorf("ApiVersions v0 after: %v with %d keys", kerr.ErrorForCode(r0.ErrorCode), len(r0.ApiKeys))
			}
		})
	}
	admBrokerStillServes(t, addr)
}

// TestBadInputProduce: per-partition errors for bad Produce requests.
func TestBadInputProduce(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	addr := n.Addr()
	adm, _ := admAdmin(t, addr)
	topic := admTopic("bad-produce")
	admCreate(t, adm, topic, 1, 1, nil)
	ctopic := admTopic("bad-produce-compact")
	admCreate(t, adm, ctopic, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	ltopic := admTopic("bad-produce-lat")
	admCreate(t, adm, ltopic, 1, 1, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")})

	ts := int64(1_700_000_000_000)
	good := func() []byte {
		return admBatch(ts, admRecord{key: []byte("k0"), value: []byte("v0")}, admRecord{key: []byte("k1"), value: []byte("v1")})
	}
	produce := func(t *testing.T, v int16, topic string, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		c := admDial(t, addr)
		return admProducePartition(t, c.roundTrip(admProduceReq(topic, 0, acks, records), v))
	}

	corruptCRC := good()
	corruptCRC[len(corruptCRC)-3] ^= 0x40 // a value byte, after the CRC was computed

	badCRCField := good()
	badCRCField[18] ^= 0x01

	// Magic 1: a legacy message set, valid in itself.
	m := kmsg.MessageV1{Magic: 1, Timestamp: ts, Key: []byte("k"), Value: []byte("v")}
	legacy := m.AppendTo(nil)
	binary.BigEndian.PutUint32(legacy[8:], uint32(len(legacy)-12))
	binary.BigEndian.PutUint32(legacy[12:], crc32.ChecksumIEEE(legacy[16:]))

	// lastOffsetDelta disagrees with the record count.
	badDelta := good()
	binary.BigEndian.PutUint32(badDelta[23:], 4)
	admFixCRC(badDelta)

	// A control batch (attribute bit 5) from a client.
	control := good()
	binary.BigEndian.PutUint16(control[21:], 0x20)
	admFixCRC(control)

	// A producer-set LogAppendTime attribute (refused on a LogAppendTime topic).
	lat := good()
	binary.BigEndian.PutUint16(lat[21:], 0x08)
	admFixCRC(lat)

	// Two batches in one partition's records.
	two := append(good(), good()...)

	// Record count says 3, two records follow.
	badCount := good()
	binary.BigEndian.PutUint32(badCount[57:], 3)
	binary.BigEndian.PutUint32(badCount[23:], 2)
	admFixCRC(badCount)

	// Length field larger than the bytes sent: Kafka sees no whole batch.
	badLen := good()
	binary.BigEndian.PutUint32(badLen[8:], uint32(len(badLen)))

	// Length field below the smallest record: Kafka's CorruptRecordException.
	tinyLen := good()
	binary.BigEndian.PutUint32(tinyLen[8:], 5)

	// A keyless record for a compacted topic.
	keyless := admBatch(ts, admRecord{value: []byte("no key")})

	cases := []struct {
		name    string
		version int16
		acks    int16
		records []byte
		want    error
		topic   string
	}{
		{"acks=5", 9, 5, good(), kerr.InvalidRequiredAcks, ""},
		{"acks=-2", 3, -2, good(), kerr.InvalidRequiredAcks, ""},
		{"corrupted record byte", 9, 1, corruptCRC, kerr.CorruptMessage, ""},
		{"corrupted CRC field", 7, -1, badCRCField, kerr.CorruptMessage, ""},
		{"magic 1 message set", 9, 1, legacy, kerr.InvalidRecord, ""},
		{"magic 1 message set at v3", 3, 1, legacy, kerr.InvalidRecord, ""},
		{"lastOffsetDelta disagrees with the count", 9, 1, badDelta, kerr.InvalidRecord, ""},
		{"record count larger than the records", 9, 1, badCount, kerr.InvalidRecord, ""},
		{"control batch from a client", 9, 1, control, kerr.InvalidRecord, ""},
		{"LogAppendTime set by the producer", 9, 1, lat, kerr.InvalidTimestamp, ltopic},
		{"two batches for one partition", 9, 1, two, kerr.InvalidRecord, ""},
		{"no records at all", 9, 1, []byte{}, kerr.InvalidRecord, ""},
		{"batch length past the records", 9, 1, badLen, kerr.InvalidRecord, ""},
		{"batch length below the minimum", 9, 1, tinyLen, kerr.CorruptMessage, ""},
		{"keyless record on a compacted topic", 9, 1, keyless, kerr.InvalidRecord, ctopic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to := topic
			if tc.topic != "" {
				to = tc.topic
			}
			p := produce(t, tc.version, to, tc.acks, tc.records)
			if err := kerr.ErrorForCode(p.ErrorCode); err != tc.want {
				t.Errorf("produce %s (v%d): %v, want %v", tc.name, tc.version, err, tc.want)
			}
			if p.BaseOffset != -1 {
				t.Errorf("produce %s: base offset %d on an error, want -1", tc.name, p.BaseOffset)
			}
		})
	}

	// Timestamps outside message.timestamp.{before,after}.max.ms.
	ttopic := admTopic("bad-produce-ts")
	admCreate(t, adm, ttopic, 1, 1, map[string]*string{
		"message.timestamp.before.max.ms": kmsg.StringPtr("60000"),
		"message.timestamp.after.max.ms":  kmsg.StringPtr("60000"),
	})
	dtopic := admTopic("bad-produce-ts-default")
	admCreate(t, adm, dtopic, 1, 1, nil)
	now := time.Now().UnixMilli()
	day := int64(24 * time.Hour / time.Millisecond)
	for _, c := range []struct {
		what  string
		topic string
		ts    int64
		want  error
	}{
		{"a day old, before.max.ms=60000", ttopic, now - day, kerr.InvalidTimestamp},
		{"a day ahead, after.max.ms=60000", ttopic, now + day, kerr.InvalidTimestamp},
		{"a day ahead, after.max.ms default (1h in Kafka 4)", dtopic, now + day, kerr.InvalidTimestamp},
		{"now", ttopic, now, nil},
	} {
		p := produce(t, 9, c.topic, 1, admBatch(c.ts, admRecord{key: []byte("k"), value: []byte("t")}))
		if err := kerr.ErrorForCode(p.ErrorCode); err != c.want {
			t.Errorf("produce with a timestamp %s: %v, want %v", c.what, err, c.want)
		}
	}

	// Unknown topic and partition.
	if p := produce(t, 9, admTopic("bad-produce-missing"), 1, good()); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(p.ErrorCode))
	}
	c := admDial(t, addr)
	resp := c.roundTrip(admProduceReq(topic, 3, 1, good()), 9)
	if p := admProducePartition(t, resp); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to partition 3 of a 1-partition topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(p.ErrorCode))
	}

	// None of the refused batches reached the log; a good one lands at 0.
	p := produce(t, 9, topic, 1, good())
	if p.ErrorCode != 0 {
		t.Fatalf("good produce after the bad ones: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if p.BaseOffset != 0 {
		t.Errorf("good produce after the bad ones at offset %d, want 0: %d records of refused batches reached the log", p.BaseOffset, p.BaseOffset)
	} else {
		p = produce(t, 3, topic, -1, good())
		if p.ErrorCode != 0 || p.BaseOffset != 2 {
			t.Errorf("good produce v3 acks=-1: err %v base offset %d, want offset 2", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
		}
		got := admConsume(t, addr, topic, []int32{0}, 4)
		for i, r := range got {
			if r.Offset != int64(i) || string(r.Value) != "v"+strconv.Itoa(i%2) || string(r.Key) != "k"+strconv.Itoa(i%2) {
				t.Errorf("record %d: %q=%q at %d", i, r.Key, r.Value, r.Offset)
			}
		}
	}

	// acks=0 with a bad batch: Kafka closes the connection instead of answering.
	c = admDial(t, addr)
	req := admProduceReq(topic, 0, 0, corruptCRC)
	req.SetVersion(9)
	c.send(req)
	c.expectClosed("acks=0 produce of a corrupt batch")

	admBrokerStillServes(t, addr)
}
