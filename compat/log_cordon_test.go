package compat

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/cli"
	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// cordonAnswers are one node's answers as cordonScenario asks them:
// error code and message by step, and by step the cordoned flag and the
// partitions of the topic "half" of each log directory (by its index in
// log.dirs).
type cordonAnswers struct {
	Errors map[string]string
	Dirs   map[string]string
}

// cordonScenario drives a one-node cluster whose log.dirs are dirs (two)
// through KIP-1066's cordoning: invalid values of cordoned.log.dirs, one
// directory cordoned (a new topic's partitions all go to the other), both
// (no new replica: CreateTopics, CreatePartitions and reassignments
// refused, while the existing partition keeps taking records), then
// uncordoned (placement again).
func cordonScenario(t *testing.T, addr string, dirs []string) cordonAnswers {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	a := cordonAnswers{Errors: map[string]string{}, Dirs: map[string]string{}}
	answer := func(code int16, msg *string) string {
		if code == 0 {
			return "OK"
		}
		if msg == nil {
			return kerr.ErrorForCode(code).Error()
		}
		m := *msg
		for i, d := range dirs {
			m = strings.ReplaceAll(m, d, fmt.Sprintf("<dir %d>", i))
		}
		return fmt.Sprintf("%v: %s", kerr.ErrorForCode(code), m)
	}
	alterOf := func(broker string, value *string) (int16, *string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, broker
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = "cordoned.log.dirs", value, kmsg.IncrementalAlterConfigOpSet
		if value == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, cl, req)
		return resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
	}
	alter := func(value *string) (int16, *string) { return alterOf("1", value) }
	mustAlter := func(value *string) {
		t.Helper()
		if code, msg := alter(value); code != 0 {
			t.Fatalf("cordoned.log.dirs=%v: %s", value, answer(code, msg))
		}
	}
	create := func(name string, validateOnly bool, assignment ...int32) (int16, *string) {
		if assignment == nil {
			return createTopicAs(t, ctx, cl, name, 4, 1, validateOnly)
		}
		return createTopicAs(t, ctx, cl, name, -1, -1, validateOnly, assignment)
	}
	// describe waits until DescribeLogDirs reports the directories
	// cordoned as want and "half" with half partitions (Kafka applies a
	// dynamic config, and creates a topic's logs, a moment after it
	// answers), then records how many of them each directory holds.
	describe := func(step string, want [2]bool, half int) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			// Not sharded: kgo's merge of a sharded DescribeLogDirs drops
			// IsCordoned.
			kresp, err := cl.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
			if err != nil {
				return err
			}
			var cordoned [2]bool
			var per [2]int
			for _, d := range kresp.(*kmsg.DescribeLogDirsResponse).Dirs {
				i := slices.IndexFunc(dirs, func(dir string) bool { return filepath.Clean(d.Dir) == filepath.Clean(dir) })
				if i < 0 {
					return fmt.Errorf("DescribeLogDirs names %s", d.Dir)
				}
				cordoned[i] = d.IsCordoned
				for _, dt := range d.Topics {
					if dt.Topic == "half" {
						per[i] = len(dt.Partitions)
					}
				}
			}
			if cordoned != want || per[0]+per[1] != half {
				return fmt.Errorf("%s: cordoned %v, half's partitions %v; want %v and %d", step, cordoned, per, want, half)
			}
			a.Dirs[step] = fmt.Sprint(per)
			return nil
		})
	}
	produce := func(step string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kept", Value: []byte(step)}).FirstErr(); err != nil {
			t.Fatalf("produce to kept, %s: %v", step, err)
		}
	}

	if code, msg := create("kept", false, 1); code != 0 {
		t.Fatalf("CreateTopics kept: %s", answer(code, msg))
	}
	for name, bad := range map[string]string{"missing": filepath.Join(dirs[0], "elsewhere"), "* and another": "*," + dirs[0],
		"two missing, one not": filepath.Join(dirs[0], "x") + "," + dirs[1] + "," + filepath.Join(dirs[0], "y")} {
		code, msg := alter(&bad)
		a.Errors["cordon "+name] = answer(code, msg)
	}
	// A per-broker config, as the listeners': not at the cluster default
	// (the code only: samsa words this refusal its own way for every
	// per-broker config).
	code, _ := alterOf("", &dirs[0])
	a.Errors["cordon at the cluster default"] = answer(code, nil)
	var msg *string
	describe("none cordoned", [2]bool{}, 0)

	mustAlter(&dirs[0])
	describe("first cordoned, before a new topic", [2]bool{true, false}, 0)
	if code, msg := create("half", false); code != 0 {
		t.Fatalf("CreateTopics half with one directory cordoned: %s", answer(code, msg))
	}
	describe("first cordoned", [2]bool{true, false}, 4)
	produce("first cordoned")

	all := "*"
	mustAlter(&all)
	// The broker tells its controller (Kafka: its next heartbeat).
	testutil.Eventually(t, 30*time.Second, func() error {
		if code, msg := create("refused", true); code == 0 {
			return fmt.Errorf("CreateTopics still placed replicas: %s", answer(code, msg))
		}
		return nil
	})
	describe("all cordoned", [2]bool{true, true}, 4)
	code, msg = create("refused", false)
	a.Errors["CreateTopics"] = answer(code, msg)
	code, msg = create("refused", false, 1)
	a.Errors["CreateTopics manual"] = answer(code, msg)
	for name, assignment := range map[string][]int32{"CreatePartitions": nil, "CreatePartitions manual": {1}} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 30000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "kept", 2
		if assignment != nil {
			rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: assignment}}
		}
		req.Topics = append(req.Topics, rt)
		resp := request[*kmsg.CreatePartitionsResponse](t, ctx, cl, req)
		a.Errors[name] = answer(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	reassign.TimeoutMillis = 30000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "kept"
	rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}
	reassign.Topics = append(reassign.Topics, rt)
	resp := request[*kmsg.AlterPartitionAssignmentsResponse](t, ctx, cl, reassign)
	a.Errors["AlterPartitionAssignments"] = answer(resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].ErrorMessage)
	move := kmsg.NewPtrAlterReplicaLogDirsRequest()
	md := kmsg.NewAlterReplicaLogDirsRequestDir()
	md.Dir = dirs[1]
	md.Topics = []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "half", Partitions: []int32{0}}}
	move.Dirs = append(move.Dirs, md)
	mresp := request[*kmsg.AlterReplicaLogDirsResponse](t, ctx, cl, move)
	a.Errors["AlterReplicaLogDirs"] = answer(mresp.Topics[0].Partitions[0].ErrorCode, nil)
	produce("all cordoned")

	mustAlter(nil)
	testutil.Eventually(t, 30*time.Second, func() error {
		if code, msg := create("after", false); code != 0 {
			return fmt.Errorf("CreateTopics after uncordoning: %s", answer(code, msg))
		}
		return nil
	})
	describe("uncordoned", [2]bool{}, 4)
	produce("uncordoned")
	return a
}

// request sends req with cl and fails the test on an error.
func request[R kmsg.Response](t *testing.T, ctx context.Context, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(R)
}

// createTopicAs sends CreateTopics of one topic, of partitions partitions
// and replication factor rf or (with both -1) assignment, and returns its
// error code and message.
func createTopicAs(t *testing.T, ctx context.Context, cl *kgo.Client, name string, partitions int32, rf int16, validateOnly bool, assignment ...[]int32) (int16, *string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for p, rs := range assignment {
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(p), Replicas: rs})
	}
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.CreateTopicsResponse](t, ctx, cl, req)
	return resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage
}

// Cordoning as Kafka 4.4 does it, asked of both: the answers of
// cordonScenario, step by step, are the same.
func TestCordonLogDirsAsKafka(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 5*time.Minute)
	kdir := t.TempDir()
	kdirs := []string{filepath.Join(kdir, "a"), filepath.Join(kdir, "b")}
	kb, err := kafkaref.Start(ctx, kafkaLibs(t, ctx), kafkaref.Options{Dir: kdir, HeapMB: 512,
		Props: map[string]string{"log.dirs": kdirs[0] + "," + kdirs[1]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Stop(30 * time.Second) })
	kafka := cordonScenario(t, kb.Addr, kdirs)

	sdirs := []string{t.TempDir(), t.TempDir()}
	samsa := cordonScenario(t, testutil.StartBroker(t, map[string]string{"log.dirs": sdirs[0] + "," + sdirs[1]}).Addr(), sdirs)
	compareProbes(t, kafka.Errors, samsa.Errors)
	if !reflect.DeepEqual(samsa.Dirs, kafka.Dirs) {
		t.Errorf("DescribeLogDirs:\n samsa     %v\n Kafka 4.4 %v", samsa.Dirs, kafka.Dirs)
	}
	t.Logf("Kafka 4.4: %v %v", kafka.Errors, kafka.Dirs)
}

// A broker cordoned with Kafka 4.4's kafka-configs.sh (cordoned.log.dirs=*
// on broker 3 of three) is given no new replica: new topics go to brokers
// 1 and 2, a manual assignment naming it is refused, and `samsa cluster
// balance` moves nothing onto it nor touches the partitions it holds,
// which keep serving. kafka-configs.sh shows the setting, kafka-log-dirs.sh
// still lists its partitions; deleting the setting restores placement.
func TestCordonedBrokerInCluster(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	addr := c.Node(1).Addr()
	ctx := testCtx(t, 4*time.Minute)
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	create := func(name string, partitions int32, rf int16, validateOnly bool, assignment ...[]int32) (int16, string) {
		code, msg := createTopicAs(t, ctx, cl, name, partitions, rf, validateOnly, assignment...)
		if msg == nil {
			return code, ""
		}
		return code, *msg
	}
	mustCreate := func(name string, partitions int32, rf int16, assignment ...[]int32) {
		t.Helper()
		if code, msg := create(name, partitions, rf, false, assignment...); code != 0 {
			t.Fatalf("CreateTopics %s: %v %s", name, kerr.ErrorForCode(code), msg)
		}
	}
	// replicasOn counts the replicas of topic (of partitions partitions,
	// as soon as Metadata shows them all) on broker id.
	replicasOn := func(topic string, partitions int, id int32) int {
		t.Helper()
		n := 0
		testutil.Eventually(t, 30*time.Second, func() error {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			ps := md.Topics[topic].Partitions
			if len(ps) != partitions {
				return fmt.Errorf("%s: %d partitions in Metadata, want %d", topic, len(ps), partitions)
			}
			n = 0
			for _, p := range ps {
				if slices.Contains(p.Replicas, id) {
					n++
				}
			}
			return nil
		})
		return n
	}
	produce := func(topic string, p int32) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr()
		})
	}
	configs := func(args ...string) string {
		return runKafkaTool(t, ctx, "", "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", addr, "--entity-type", "brokers", "--entity-name", "3"}, args...)...)
	}

	mustCreate("old", -1, -1, []int32{3, 1}, []int32{3, 2})
	produce("old", 0)
	configs("--alter", "--add-config", "cordoned.log.dirs=*")
	if out := configs("--describe"); !strings.Contains(out, "cordoned.log.dirs=*") {
		t.Fatalf("kafka-configs --describe of broker 3 does not show cordoned.log.dirs=*:\n%s", out)
	}
	// Once the controller sees broker 3 cordoned, two brokers take replicas.
	testutil.Eventually(t, 30*time.Second, func() error {
		if code, msg := create("probe", 1, 3, true); code != kerr.InvalidReplicationFactor.Code {
			return fmt.Errorf("replication factor 3 with broker 3 cordoned: %v %s", kerr.ErrorForCode(code), msg)
		}
		return nil
	})
	mustCreate("spread", 6, 2)
	mustCreate("skewed", -1, -1, []int32{1, 2}, []int32{1, 2}, []int32{1, 2}, []int32{1, 2})
	if n := replicasOn("spread", 6, 3); n != 0 {
		t.Errorf("%d replicas of a new topic on cordoned broker 3", n)
	}
	if code, msg := create("manual", -1, -1, false, []int32{1, 3}); code != kerr.InvalidReplicaAssignment.Code ||
		msg != "The manual partition assignment includes broker 3, but all its log directories are cordoned." {
		t.Errorf("CreateTopics naming cordoned broker 3: %v %q", kerr.ErrorForCode(code), msg)
	}
	out := runKafkaTool(t, ctx, "", "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", addr, "--describe", "--broker-list", "3", "--topic-list", "old")
	if !strings.Contains(out, `"partition":"old-0"`) || !strings.Contains(out, `"partition":"old-1"`) {
		t.Errorf("kafka-log-dirs --describe of cordoned broker 3 does not list its partitions:\n%s", out)
	}
	produce("old", 0)
	produce("old", 1)

	var stdout, stderr strings.Builder
	if code := cli.Run(ctx, []string{"cluster", "balance", "--timeout", "2m", "--bootstrap-server", addr},
		cli.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("samsa cluster balance: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, topic := range []string{"spread", "skewed"} {
		if n := replicasOn(topic, map[string]int{"spread": 6, "skewed": 4}[topic], 3); n != 0 {
			t.Errorf("samsa cluster balance moved %d replicas of %s onto cordoned broker 3:\n%s", n, topic, stdout.String())
		}
	}
	if n := replicasOn("old", 2, 3); n != 2 {
		t.Errorf("old has %d replicas on broker 3 after the balance, want its 2", n)
	}
	produce("old", 1)

	configs("--alter", "--delete-config", "cordoned.log.dirs")
	testutil.Eventually(t, 30*time.Second, func() error {
		if code, msg := create("probe", 1, 3, true); code != 0 {
			return fmt.Errorf("replication factor 3 after uncordoning: %v %s", kerr.ErrorForCode(code), msg)
		}
		return nil
	})
	mustCreate("again", 6, 2)
	if n := replicasOn("again", 6, 3); n == 0 {
		t.Error("no replica of a new topic on broker 3 after uncordoning")
	}
}
