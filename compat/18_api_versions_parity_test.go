package compat

// Version parity with Apache Kafka 4.4: kafka44APIs is the ApiVersions
// table Kafka 4.4.0 advertises (a combined KRaft node started by
// internal/kafkaref, asked with ApiVersions v5), and
// TestApiVersionsKafkaReference checks that it still is. samsa must serve
// at least that range of every key both have; samsaLacks lists the keys
// Kafka serves to clients that samsa does not, and shrinks as they come.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// kafka44APIs is Kafka 4.4.0's ApiVersions: key -> {min, max}.
var kafka44APIs = map[int16][2]int16{
	0: {0, 13}, 1: {4, 18}, 2: {1, 11}, 3: {0, 13}, 8: {2, 10}, 9: {1, 10}, 10: {0, 6},
	11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6}, 16: {0, 5}, 17: {0, 1},
	18: {0, 5}, 19: {2, 7}, 20: {1, 6}, 21: {0, 2}, 22: {0, 5}, 23: {2, 4}, 24: {0, 5},
	25: {0, 4}, 26: {0, 5}, 27: {1, 2}, 28: {0, 6}, 29: {1, 3}, 30: {1, 3}, 31: {1, 3},
	32: {1, 4}, 33: {0, 2}, 34: {1, 2}, 35: {1, 5}, 36: {0, 2}, 37: {0, 3}, 38: {1, 3},
	39: {1, 2}, 40: {1, 2}, 41: {1, 3}, 42: {0, 3}, 43: {0, 2}, 44: {0, 1}, 45: {0, 1},
	46: {0, 0}, 47: {0, 0}, 48: {0, 1}, 49: {0, 1}, 50: {0, 0}, 51: {0, 0}, 55: {0, 2},
	57: {0, 2}, 60: {0, 2}, 61: {0, 0}, 64: {0, 0}, 65: {0, 0}, 66: {0, 2}, 68: {0, 1},
	69: {0, 1}, 74: {0, 1}, 75: {0, 0}, 76: {1, 1}, 77: {1, 1}, 78: {1, 2}, 79: {1, 2},
	80: {0, 1}, 81: {0, 0}, 83: {0, 0}, 84: {0, 0}, 85: {0, 1}, 86: {0, 0}, 87: {0, 1},
	88: {0, 1}, 89: {0, 1}, 90: {0, 1}, 91: {0, 0}, 92: {0, 0}, 93: {0, 0}, 94: {0, 0},
}

// kafka44Finalized are the feature levels a fresh Kafka 4.4.0 node
// finalizes (ApiVersions' FinalizedFeatures).
var kafka44Finalized = map[string]int16{
	"metadata.version": 33, "kraft.version": 1, "group.version": 1, "share.version": 2,
	"streams.version": 1, "transaction.version": 2, "eligible.leader.replicas.version": 1,
}

// kafka44InterBroker are keys Kafka 4.4 advertises that only its brokers
// and controllers send (share-group state RPCs of the share coordinator,
// the controller's UnregisterController): no client needs samsa to serve
// them.
var kafka44InterBroker = []int16{83, 84, 85, 86, 87, 94}

// samsaLacks are the client-facing keys Kafka 4.4 serves that samsa does
// not yet. Remove a key when its handler lands. AddRaftVoter and
// RemoveRaftVoter (80, 81) stay: Kafka adds a controller that already runs
// as an observer and has fetched the metadata log, and removes one by id
// and directory id; samsa's quorum is an etcd cluster, whose members must
// be added before they start (or as learners, promoted once caught up),
// and samsa's controller processes never start outside the cluster to
// catch up first.
var samsaLacks = []int16{
	80, 81,
}

// samsaBeyondDefault are keys samsa serves that Kafka 4.4 advertises
// only with a client telemetry receiver plugin configured: samsa has its
// own receiver (KIP-714; TestTelemetryKafkaReference compares the answers,
// which Kafka gives unadvertised).
var samsaBeyondDefault = map[int16][2]int16{71: {0, 0}, 72: {0, 0}}

// samsaBehind are keys samsa serves at a lower max version than Kafka
// 4.4, with the max samsa serves: TxnOffsetCommit v6 (topic ids). Remove
// an entry when samsa
// reaches Kafka's max; lowering one is a regression the test reports.
var samsaBehind = map[int16]int16{28: 5}

// apiVersionsTable asks addr for ApiVersions v5 and returns its table.
func apiVersionsTable(t *testing.T, addr string) (map[int16][2]int16, *kmsg.ApiVersionsResponse) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-compat", "1.0.0"
	resp := admDial(t, addr).roundTrip(req, 5).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v5 at %s: error %d", addr, resp.ErrorCode)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return got, resp
}

// TestApiVersionsParity fails when samsa serves less of a key than Kafka
// 4.4 does (a higher min or a lower max, unless samsaBehind names that
// max), lacks a key not in samsaLacks, or serves a key samsaLacks still
// names.
func TestApiVersionsParity(t *testing.T) {
	t.Parallel()
	n := admBroker(t, nil)
	got, _ := apiVersionsTable(t, n.Addr())
	for _, k := range slices.Sorted(maps.Keys(kafka44APIs)) {
		want := kafka44APIs[k]
		g, ok := got[k]
		switch {
		case !ok && !slices.Contains(samsaLacks, k) && !slices.Contains(kafka44InterBroker, k):
			t.Errorf("key %d (%s): Kafka 4.4 serves %d-%d, samsa nothing, and samsaLacks does not name it", k, kmsg.NameForKey(k), want[0], want[1])
		case ok && slices.Contains(samsaLacks, k):
			t.Errorf("key %d (%s) is served now (%d-%d): remove it from samsaLacks", k, kmsg.NameForKey(k), g[0], g[1])
		case ok && g[1] < want[1] && samsaBehind[k] == g[1]:
			// known, and named in samsaBehind
		case ok && (g[0] > want[0] || g[1] < want[1]):
			t.Errorf("key %d (%s): samsa serves %d-%d, Kafka 4.4 %d-%d", k, kmsg.NameForKey(k), g[0], g[1], want[0], want[1])
		case ok && samsaBehind[k] != 0:
			t.Errorf("key %d (%s) reaches Kafka's v%d now: remove it from samsaBehind", k, kmsg.NameForKey(k), want[1])
		}
	}
	for k, g := range got {
		if w, ok := samsaBeyondDefault[k]; ok && w == g {
			continue
		}
		if _, ok := kafka44APIs[k]; !ok {
			t.Errorf("key %d (%s) %d-%d: Kafka 4.4 does not serve it", k, kmsg.NameForKey(k), g[0], g[1])
		}
	}
	var lacking []string
	for _, k := range samsaLacks {
		lacking = append(lacking, fmt.Sprintf("%d %s", k, kmsg.NameForKey(k)))
	}
	t.Logf("samsa lacks %d keys Kafka 4.4 serves to clients: %v; serves %d at lower versions: %v", len(samsaLacks), lacking, len(samsaBehind), samsaBehind)
}

// TestApiVersionsKafkaReference starts Apache Kafka 4.4 (internal/kafkaref)
// and checks that kafka44APIs and kafka44Finalized are what it advertises,
// then puts the same version-dependent questions to it and to samsa.
func TestApiVersionsKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	got, resp := apiVersionsTable(t, kb.Addr)
	if !maps.Equal(got, kafka44APIs) {
		t.Errorf("Apache Kafka advertises\n%v\nkafka44APIs records\n%v", got, kafka44APIs)
	}
	fin := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		fin[f.Name] = f.MaxVersionLevel
	}
	if !maps.Equal(fin, kafka44Finalized) {
		t.Errorf("Apache Kafka finalizes %v, kafka44Finalized records %v", fin, kafka44Finalized)
	}

	n := admBroker(t, nil)
	kafka, samsa := parityProbe(t, kb.Addr), parityProbe(t, n.Addr())
	compareProbes(t, kafka, samsa)
}

// parityProbe asks addr the questions whose answers depend on the newest
// versions, and returns each answer in a form both brokers must share.
func parityProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := admDial(t, addr)
	meta := c.roundTrip(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
	if meta.ClusterID == nil || len(meta.Brokers) != 1 {
		t.Fatalf("Metadata at %s: cluster %v, brokers %+v", addr, meta.ClusterID, meta.Brokers)
	}
	cluster, node := *meta.ClusterID, meta.Brokers[0].NodeID
	for _, tc := range []struct {
		name    string
		cluster *string
		node    int32
	}{
		{"bootstrapping", nil, -1},
		{"this broker", &cluster, node},
		{"another node", &cluster, node + 1},
		{"another cluster", kmsg.StringPtr("AAAAAAAAAAAAAAAAAAAAAA"), node},
		{"cluster id alone", &cluster, -1},
		{"node id alone", nil, node},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-compat", "1.0.0"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		resp := c.roundTrip(req, 5).(*kmsg.ApiVersionsResponse)
		out["ApiVersions v5 "+tc.name] = fmt.Sprintf("error %d, keys listed %v", resp.ErrorCode, len(resp.ApiKeys) > 0)
	}

	adm, cl := admAdmin(t, addr)
	topic := admTopic("parity")
	admCreate(t, adm, topic, 1, 1, nil)
	// Timestamps of their own: two records produced within one millisecond
	// would share one, and MAX_TIMESTAMP (-3) names the first of them.
	ts0 := time.Now().Truncate(time.Millisecond)
	admProduce(t, cl, &kgo.Record{Topic: topic, Value: []byte("a"), Timestamp: ts0},
		&kgo.Record{Topic: topic, Value: []byte("b"), Timestamp: ts0.Add(time.Millisecond)})
	listOffsets := func(what, topic string, v int16, ts int64) {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req, v).(*kmsg.ListOffsetsResponse)
		p := resp.Topics[0].Partitions[0]
		if p.Timestamp >= 0 {
			p.Timestamp -= ts0.UnixMilli() // the same record's on both brokers
		}
		out[fmt.Sprintf("ListOffsets v%d %s", v, what)] = fmt.Sprintf("error %d offset %d epoch %d timestamp %d", p.ErrorCode, p.Offset, p.LeaderEpoch, p.Timestamp)
	}
	for _, v := range []int16{1, 6, 7, 8, 9, 10, 11} {
		for ts := int64(-1); ts >= -7; ts-- {
			listOffsets(fmt.Sprintf("ts %d", ts), topic, v, ts)
		}
	}
	// Timestamps no record reaches, and MAX_TIMESTAMP of an empty log:
	// no offset, and no leader epoch either.
	empty := admTopic("parity-empty")
	admCreate(t, adm, empty, 1, 1, nil)
	for _, v := range []int16{4, 11} {
		listOffsets("after every record", topic, v, ts0.Add(time.Hour).UnixMilli())
		listOffsets("empty, ts 0", empty, v, 0)
	}
	listOffsets("empty, max timestamp", empty, 11, -3)
	offsetsByTopicID(t, c, topicID(t, adm, topic), out)
	describeTopicPartitionsPages(t, c, adm, out)
	return out
}

// describeTopicPartitionsPages pages through DescribeTopicPartitions with
// small limits and records every page.
func describeTopicPartitionsPages(t *testing.T, c *admConn, adm *kadm.Client, out map[string]string) {
	t.Helper()
	prefix := admTopic("dtp")
	a, b := prefix+"-a", prefix+"-b"
	admCreate(t, adm, a, 3, 1, nil)
	admCreate(t, adm, b, 2, 1, nil)
	page := func(topics []string, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor) (string, *kmsg.DescribeTopicPartitionsResponseNextCursor) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp := c.roundTrip(req, 0).(*kmsg.DescribeTopicPartitionsResponse)
		var s string
		for _, rt := range resp.Topics {
			name := "null"
			if rt.Topic != nil {
				name = strings.TrimPrefix(*rt.Topic, prefix)
			}
			s += fmt.Sprintf("[%s error %d internal %v id set %v ops %d:", name, rt.ErrorCode, rt.IsInternal, rt.TopicID != [16]byte{}, rt.AuthorizedOperations)
			for _, p := range rt.Partitions {
				s += fmt.Sprintf(" p%d leader %d epoch %d replicas %v isr %v elr %v", p.Partition, p.LeaderID, p.LeaderEpoch, p.Replicas, p.ISR, p.EligibleLeaderReplicas)
			}
			s += "]"
		}
		if nc := resp.NextCursor; nc != nil {
			s += fmt.Sprintf(" next %s/%d", strings.TrimPrefix(nc.Topic, prefix), nc.Partition)
		}
		return s, resp.NextCursor
	}
	// Kafka's CreateTopics answers before its metadata cache has the
	// topic: wait until both topics are described with their leaders.
	testutil.Eventually(t, 30*time.Second, func() error {
		if s, next := page([]string{a, b}, 100, nil); next != nil || strings.Count(s, "leader 1 ") != 5 {
			return fmt.Errorf("not yet described: %s", s)
		}
		return nil
	})
	for _, limit := range []int32{1, 2, 3, 5, 0} {
		var cursor *kmsg.DescribeTopicPartitionsRequestCursor
		for i := 0; i < 8; i++ {
			s, next := page([]string{b, a, prefix + "-missing"}, limit, cursor)
			out[fmt.Sprintf("DescribeTopicPartitions limit %d page %d", limit, i)] = s
			if next == nil {
				break
			}
			cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: next.Topic, Partition: next.Partition}
		}
	}
	s, _ := page([]string{a}, 0, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: b, Partition: 0})
	out["DescribeTopicPartitions cursor not requested"] = s
	s, _ = page([]string{a, b}, 0, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: a, Partition: 7})
	out["DescribeTopicPartitions cursor past the partitions"] = s
	s, _ = page([]string{"bad/name"}, 0, nil)
	out["DescribeTopicPartitions invalid name"] = s
}

// offsetsByTopicID commits and fetches offsets by topic id (OffsetCommit
// and OffsetFetch v10), for a topic id that exists and one that does not.
func offsetsByTopicID(t *testing.T, c *admConn, id [16]byte, out map[string]string) {
	t.Helper()
	unknown := [16]byte{1, 2, 3}
	group := admTopic("parity-group")
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = group, -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	// FindCoordinator creates __consumer_offsets, which the coordinator
	// may still be loading.
	var cr *kmsg.OffsetCommitResponse
	testutil.Eventually(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{group}
		c.roundTrip(fc, 4)
		cr = c.roundTrip(commit, 10).(*kmsg.OffsetCommitResponse)
		for _, rt := range cr.Topics {
			switch code := rt.Partitions[0].ErrorCode; code {
			case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
				return fmt.Errorf("OffsetCommit v10: %v", kerr.ErrorForCode(code))
			}
		}
		return nil
	})
	// Kafka answers the unknown ids first: compare by id, not by order.
	name := map[[16]byte]string{id: "known id", unknown: "unknown id"}
	for _, rt := range cr.Topics {
		out["OffsetCommit v10 "+name[rt.TopicID]] = fmt.Sprintf("error %d", rt.Partitions[0].ErrorCode)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Partitions = tid, []int32{0, 1}
		rg.Topics = append(rg.Topics, rt)
	}
	fetch.Groups = append(fetch.Groups, rg)
	fr := c.roundTrip(fetch, 10).(*kmsg.OffsetFetchResponse)
	for _, rt := range fr.Groups[0].Topics {
		for _, p := range rt.Partitions {
			out[fmt.Sprintf("OffsetFetch v10 %s partition %d", name[rt.TopicID], p.Partition)] = fmt.Sprintf("error %d offset %d", p.ErrorCode, p.Offset)
		}
	}
	fetch.Groups[0].Topics = nil
	fr = c.roundTrip(fetch, 10).(*kmsg.OffsetFetchResponse)
	all := fmt.Sprintf("error %d", fr.Groups[0].ErrorCode)
	for _, rt := range fr.Groups[0].Topics {
		for _, p := range rt.Partitions {
			all += fmt.Sprintf("; %s partition %d offset %d", name[rt.TopicID], p.Partition, p.Offset)
		}
	}
	out["OffsetFetch v10 all topics"] = all
}
