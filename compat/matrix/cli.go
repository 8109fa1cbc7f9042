package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// Kafka's own command-line tools, run from Apache Kafka's jars by their main
// classes with the arguments their shell scripts take. Each run is one JVM,
// so the scenarios use the tools for what they test and franz-go for setup.
const (
	kafkaTopics         = "org.apache.kafka.tools.TopicCommand"
	kafkaConsoleProduce = "org.apache.kafka.tools.ConsoleProducer"
	kafkaConsoleConsume = "org.apache.kafka.tools.consumer.ConsoleConsumer"
	kafkaConsumerGroups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	kafkaConfigs        = "org.apache.kafka.tools.ConfigCommand"
	kafkaGetOffsets     = "org.apache.kafka.tools.GetOffsetShell"
	kafkaAcls           = "org.apache.kafka.tools.AclCommand"
)

// toolJVM keeps the short-lived tool JVMs light.
var toolJVM = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m"}

func cliJob(root string) job {
	name := "Kafka CLI tools " + kafkaref.Version(filepath.Join(root, ".cache", "kafka-libs"))
	return goJob(name, func() goScenarios {
		return addSecure(goScenarios{
			"create":  cliCreate,
			"produce": cliProduce,
			"group":   cliGroup,
			"admin":   cliAdmin,
			"errors":  cliErrors,
		}, cliSecure)
	})
}

// tool runs one of Kafka's tools with stdin and returns its stdout; err
// carries the exit status, any authorization error and the tail of its
// output.
func (e *env) tool(ctx context.Context, stdin string, class string, args ...string) (string, error) {
	return e.toolAt(ctx, e.bootstrap, stdin, class, args...)
}

// toolAt is tool with the --bootstrap-server given.
func (e *env) toolAt(ctx context.Context, bootstrap, stdin string, class string, args ...string) (string, error) {
	libs, err := e.kafkaLibs(ctx)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := kafkaref.Java(ctx, libs, toolJVM, class, append([]string{"--bootstrap-server", bootstrap}, args...)...)
	cmd.Dir = e.tmp
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		all := out.String() + errb.String()
		// An authorization error is often far above the tail (a stack trace
		// follows it): the error names it.
		if l := authzLine(all); l != "" {
			return out.String(), fmt.Errorf("%s %s: %v: %s: %s", shortClass(class), strings.Join(args, " "), err, l, lastLines(all, 4))
		}
		return out.String(), fmt.Errorf("%s %s: %v: %s", shortClass(class), strings.Join(args, " "), err, lastLines(all, 4))
	}
	return out.String() + errb.String(), nil
}

func shortClass(c string) string { return c[strings.LastIndexByte(c, '.')+1:] }

func lastLines(s string, n int) string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

// The console tools are line-based: a record is
// "i:<i>,bin:<hex>\t<key>\t<hex value>" for ConsoleProducer with parse.key
// and parse.headers, and ConsoleConsumer prints it back prefixed with
// "Partition:<p>\tOffset:<o>\t".
func cliLine(i int) string {
	return fmt.Sprintf("i:%d,bin:%s\t%s\t%s", i, hex.EncodeToString(recBin(i)), recKey(i), hex.EncodeToString(recValue(i)))
}

var producerProps = []string{"--reader-property", "parse.key=true", "--reader-property", "parse.headers=true"}

var consumerProps = []string{"--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
	"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true"}

var consumedLine = regexp.MustCompile(`^Partition:(\d+)\tOffset:(\d+)\t(.*)$`)

// cliProduceRange produces records from..to-1 as ConsoleProducer would
// from cliLine, through franz-go (setup for the group scenario).
func cliProduceRange(ctx context.Context, e *env, topic string, from, to int) error {
	cl, err := franzClient(e)
	if err != nil {
		return err
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Key: recKey(i), Value: []byte(hex.EncodeToString(recValue(i))),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}, {Key: "bin", Value: []byte(hex.EncodeToString(recBin(i)))}}})
	}
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

// cliRecords parses ConsoleConsumer's output into (partition, offset, i),
// checking every record against what was sent.
func cliRecords(out string) ([][3]int, error) {
	var recs [][3]int
	for _, l := range strings.Split(out, "\n") {
		m := consumedLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		o, _ := strconv.Atoi(m[2])
		hs := strings.SplitN(m[3], "\t", 2)[0]
		i := -1
		if strings.HasPrefix(hs, "i:") {
			i, _ = strconv.Atoi(strings.SplitN(strings.TrimPrefix(hs, "i:"), ",", 2)[0])
		}
		if i < 0 || m[3] != cliLine(i) {
			return nil, fmt.Errorf("partition %d offset %d: %q differs from what was sent", p, o, m[3])
		}
		recs = append(recs, [3]int{p, o, i})
	}
	return recs, nil
}

func cliCreate(ctx context.Context, e *env) error {
	topic := e.prefix + "-create"
	if _, err := e.tool(ctx, "", kafkaTopics, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1"); err != nil {
		return err
	}
	out, err := e.tool(ctx, "", kafkaTopics, "--describe", "--topic", topic)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "PartitionCount: 3") || strings.Count(out, "Leader: ") != 3 {
		return fmt.Errorf("kafka-topics --describe: %q, want PartitionCount: 3 and three partitions with leaders", lastLines(out, 4))
	}
	return nil
}

// cliProduce sends 200 records with each codec, one ConsoleProducer per
// codec, into one topic, and reads all 1000 back with one ConsoleConsumer.
func cliProduce(ctx context.Context, e *env) error {
	topic := e.prefix + "-produce"
	if err := e.createTopic(ctx, topic, 3, nil); err != nil {
		return err
	}
	for k, codec := range codecs {
		var in strings.Builder
		for i := k * 200; i < (k+1)*200; i++ {
			in.WriteString(cliLine(i) + "\n")
		}
		args := append([]string{"--topic", topic, "--compression-codec", codec, "--producer-property", "acks=all"}, producerProps...)
		if _, err := e.tool(ctx, in.String(), kafkaConsoleProduce, args...); err != nil {
			return fmt.Errorf("%s: %w", codec, err)
		}
	}
	args := append([]string{"--topic", topic, "--from-beginning", "--max-messages", "1000", "--timeout-ms", "30000"}, consumerProps...)
	out, err := e.tool(ctx, "", kafkaConsoleConsume, args...)
	if err != nil {
		return err
	}
	recs, err := cliRecords(out)
	if err != nil {
		return err
	}
	c := newReadCheck(1000)
	for _, r := range recs {
		i := r[2]
		if err := c.add(int32(r[0]), int64(r[1]), recKey(i), recValue(i), recHeaders(i)); err != nil {
			return err
		}
	}
	if !c.done() {
		return fmt.Errorf("kafka-console-consumer printed %d of 1000 records", len(c.seen))
	}
	return nil
}

// cliGroup runs two ConsoleConsumers in one group until they have read 300
// records and gone idle, checks the group's committed offsets with
// kafka-consumer-groups, then a third ConsoleConsumer in the group reads only
// the 100 records produced after.
func cliGroup(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-group", e.prefix+"-group-g"
	if err := e.createTopic(ctx, topic, 3, nil); err != nil {
		return err
	}
	args := append([]string{"--topic", topic, "--group", group, "--timeout-ms", "10000"}, consumerProps...)
	type run struct {
		out string
		err error
	}
	runs := make([]run, 2)
	var wg sync.WaitGroup
	for k := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[k].out, runs[k].err = e.tool(ctx, "", kafkaConsoleConsume, args...)
		}()
	}
	// Produce once both members hold partitions, so that each reads some.
	werr := eventually(ctx, "two members holding partitions", func(ctx context.Context) error {
		return e.groupMembers(ctx, group, 2)
	})
	if werr == nil {
		werr = cliProduceRange(ctx, e, topic, 0, 300)
	}
	wg.Wait()
	if werr != nil {
		return werr
	}
	seen := map[int]bool{}
	for k, r := range runs {
		recs, err := cliRecords(r.out)
		if err == nil {
			err = r.err
		}
		if err != nil && !strings.Contains(err.Error(), "TimeoutException") {
			return fmt.Errorf("member %d: %w", k+1, err)
		}
		for _, rec := range recs {
			seen[rec[2]] = true
		}
	}
	if len(seen) != 300 {
		return fmt.Errorf("two members printed %d of 300 records", len(seen))
	}
	out, err := e.tool(ctx, "", kafkaConsumerGroups, "--describe", "--group", group)
	if err != nil {
		return err
	}
	if lag := cliLags(out, topic); len(lag) != 3 || lag[0]+lag[1]+lag[2] != 0 {
		return fmt.Errorf("kafka-consumer-groups --describe: lags %v, want 0 on 3 partitions: %s", lag, lastLines(out, 5))
	}
	if err := cliProduceRange(ctx, e, topic, 300, 400); err != nil {
		return err
	}
	args = append([]string{"--topic", topic, "--group", group, "--max-messages", "100", "--timeout-ms", "30000"}, consumerProps...)
	out, err = e.tool(ctx, "", kafkaConsoleConsume, args...)
	if err != nil {
		return err
	}
	recs, err := cliRecords(out)
	if err != nil {
		return err
	}
	again := map[int]bool{}
	for _, r := range recs {
		if r[2] < 300 {
			return fmt.Errorf("new member read committed record %d again (partition %d offset %d)", r[2], r[0], r[1])
		}
		again[r[2]] = true
	}
	if len(again) != 100 {
		return fmt.Errorf("new member: read %d of the 100 new records", len(again))
	}
	return nil
}

// cliLags parses kafka-consumer-groups --describe: partition → LAG.
func cliLags(out, topic string) map[int]int {
	lags := map[int]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
		if len(f) >= 6 && f[1] == topic {
			p, err1 := strconv.Atoi(f[2])
			lag, err2 := strconv.Atoi(f[5])
			if err1 == nil && err2 == nil {
				lags[p] = lag
			}
		}
	}
	return lags
}

// cliOffsets parses kafka-consumer-groups --describe: partition → CURRENT-OFFSET.
func cliOffsets(out, topic string) map[int]int {
	offs := map[int]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[1] == topic {
			p, err1 := strconv.Atoi(f[2])
			o, err2 := strconv.Atoi(f[3])
			if err1 == nil && err2 == nil {
				offs[p] = o
			}
		}
	}
	return offs
}

func cliAdmin(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-admin", e.prefix+"-admin-g"
	if err := e.createTopic(ctx, topic, 3, nil); err != nil {
		return err
	}
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	if err := franzTimestamped(ctx, e, topic, base); err != nil {
		return err
	}
	for _, q := range []struct{ time, want string }{
		{"-2", topic + ":0:0"},
		{"-1", topic + ":0:30"},
		{strconv.FormatInt(base.Add(10500*time.Millisecond).UnixMilli(), 10), topic + ":0:11"},
	} {
		out, err := e.tool(ctx, "", kafkaGetOffsets, "--topic", topic, "--partitions", "0", "--time", q.time)
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(lastLines(out, 1)); got != q.want {
			return fmt.Errorf("kafka-get-offsets --time %s: %q, want %q", q.time, got, q.want)
		}
	}
	args := append([]string{"--topic", topic, "--group", group, "--from-beginning", "--max-messages", "30", "--timeout-ms", "30000"}, consumerProps...)
	if _, err := e.tool(ctx, "", kafkaConsoleConsume, args...); err != nil {
		return err
	}
	out, err := e.tool(ctx, "", kafkaConsumerGroups, "--describe", "--group", group)
	if err != nil {
		return err
	}
	if offs := cliOffsets(out, topic); offs[0] != 30 {
		return fmt.Errorf("kafka-consumer-groups --describe: offsets %v, want partition 0 at 30: %s", offs, lastLines(out, 5))
	}
	out, err = e.tool(ctx, "", kafkaConfigs, "--describe", "--entity-type", "topics", "--entity-name", topic, "--all")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "cleanup.policy=delete ") || !strings.Contains(out, "retention.ms=604800000 ") {
		return fmt.Errorf("kafka-configs --describe --all lacks cleanup.policy=delete or retention.ms=604800000: %s", lastLines(out, 3))
	}
	if _, err := e.tool(ctx, "", kafkaConfigs, "--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=3600000"); err != nil {
		return err
	}
	out, err = e.tool(ctx, "", kafkaConfigs, "--describe", "--entity-type", "topics", "--entity-name", topic)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "retention.ms=3600000 ") || !strings.Contains(out, "DYNAMIC_TOPIC_CONFIG:retention.ms=3600000") {
		return fmt.Errorf("kafka-configs --describe after --alter: %s, want retention.ms=3600000 as DYNAMIC_TOPIC_CONFIG", lastLines(out, 3))
	}
	if _, err := e.tool(ctx, "", kafkaTopics, "--delete", "--topic", topic); err != nil {
		return err
	}
	return eventually(ctx, "topic deleted", func(ctx context.Context) error {
		out, err := e.tool(ctx, "", kafkaTopics, "--list")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.TrimSpace(l) == topic {
				return errors.New("kafka-topics --list still lists it")
			}
		}
		return nil
	})
}

func cliErrors(ctx context.Context, e *env) error {
	missing, big := e.prefix+"-errors-missing", e.prefix+"-errors-big"
	out, _ := e.tool(ctx, "x\n", kafkaConsoleProduce, "--topic", missing, "--producer-property", "max.block.ms=3000")
	if !strings.Contains(out, "not present in metadata") && !strings.Contains(out, "UnknownTopicOrPartition") {
		return fmt.Errorf("kafka-console-producer to a missing topic: %q, want a TimeoutException (not present in metadata) or UnknownTopicOrPartitionException", lastLines(out, 3))
	}
	if err := e.noTopic(ctx, missing); err != nil {
		return err
	}
	if _, err := e.tool(ctx, "", kafkaTopics, "--create", "--topic", big, "--partitions", "1", "--replication-factor", "1",
		"--config", "max.message.bytes=2048"); err != nil {
		return err
	}
	line := hex.EncodeToString(incompressible(4096))
	// One record alone: the Java producer splits a batch of several on
	// MESSAGE_TOO_LARGE, and ConsoleProducer's batch of a small and a large
	// record makes it split until its network thread overflows its stack
	// (Apache Kafka 4.4.0, against Kafka itself).
	out, _ = e.tool(ctx, line+"\n", kafkaConsoleProduce, "--topic", big)
	if !strings.Contains(out, "RecordTooLargeException") {
		return fmt.Errorf("kafka-console-producer of 8192 bytes to a topic with max.message.bytes=2048: %q, want RecordTooLargeException", lastLines(out, 3))
	}
	return nil
}

// createTopic is setup through franz-go for the scenarios that test
// something else.
func (e *env) createTopic(ctx context.Context, topic string, partitions int32, configs map[string]*string) error {
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	return franzCreateTopic(ctx, adm, topic, partitions, configs)
}

// groupMembers wants the group to have n members, each holding partitions.
func (e *env) groupMembers(ctx context.Context, group string, n int) error {
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	g := dg[group]
	if g.Err != nil {
		return g.Err
	}
	if g.State != "Stable" || len(g.Members) != n {
		return fmt.Errorf("group %s %s with %d members", group, g.State, len(g.Members))
	}
	for _, m := range g.Members {
		if ca, ok := m.Assigned.AsConsumer(); !ok || len(ca.Topics) == 0 || len(ca.Topics[0].Partitions) == 0 {
			return fmt.Errorf("member %s holds no partition", m.MemberID)
		}
	}
	return nil
}

// noTopic fails when topic exists.
func (e *env) noTopic(ctx context.Context, topic string) error {
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	ts, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	if ts.Has(topic) {
		return fmt.Errorf("a produce created %s with auto-creation off", topic)
	}
	return nil
}

// franzTimestamped produces records 0..29 to partition 0 of topic, record i
// with the timestamp base+i seconds.
func franzTimestamped(ctx context.Context, e *env, topic string, base time.Time) error {
	cl, err := franzClient(e, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: recKey(i), Value: recValue(i), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}
