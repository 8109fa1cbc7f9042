package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaServerProperties is written after the config/server.properties
// Apache Kafka 4.4 ships (KRaft, combined broker and controller), with
// some lines a production file adds: metrics, SSL settings on a listener
// samsa does not serve, quotas, rack-aware fetching.
const kafkaServerProperties = `# A Kafka 4.4 server.properties, as shipped, plus some common additions.
############################# Server Basics #############################
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093

############################# Socket Server Settings #############################
listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################
log.dirs=LOGDIR
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Retention Policy #############################
#log.flush.interval.messages=10000
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000

############################# Additions #############################
broker.rack=rack-1
metric.reporters=org.apache.kafka.common.metrics.JmxReporter
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
ssl.keystore.location=/etc/kafka/secrets/kafka.keystore.jks
ssl.keystore.password=changeit
ssl.client.auth=none
listener.name.ssl.ssl.keystore.type=PKCS12
quota.window.num=11
delegation.token.secret.key=a-secret-of-the-cluster
delegation.token.max.lifetime.ms=172800000
delegation.token.expiry.time.ms=3600000
group.initial.rebalance.delay.ms=0
`

// The ignored properties the file sets, as the warning names them.
const kafkaServerPropertiesIgnored = "metric.reporters," +
	"num.io.threads,num.network.threads,num.recovery.threads.per.data.dir"

// An apache/kafka compose service's environment (the image's docs: KRaft
// combined mode, one node), with KIP-848 and metrics settings, and the
// image's own variables.
func composeEnv(logDir string) []string {
	return []string{
		"KAFKA_NODE_ID=1",
		"KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:0",
		"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:9093",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR=1",
		"KAFKA_NUM_PARTITIONS=3",
		"KAFKA_METRIC_REPORTERS=org.apache.kafka.common.metrics.JmxReporter",
		"KAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS=45000",
		"KAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS=5000",
		"KAFKA_GROUP_COORDINATOR_REBALANCE_PROTOCOLS=classic,consumer",
		"KAFKA_LOG_DIRS=" + logDir,
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		"KAFKA_HEAP_OPTS=-Xmx1G -Xms1G",
		"KAFKA_JMX_PORT=9101",
	}
}

const composeIgnored = "cluster.id,group.coordinator.rebalance.protocols,metric.reporters"

func TestServeKafkaServerProperties(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	text := strings.Replace(kafkaServerProperties, "LOGDIR", filepath.Join(dir, "data"), 1)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, log := serveInProcess(t, []string{"serve", file}, nil)
	wantIgnoredWarning(t, log, kafkaServerPropertiesIgnored)
	produceConsume(t, addr, "from-server-properties")
}

func TestServeKafkaComposeEnvironment(t *testing.T) {
	addr, log := serveInProcess(t, []string{"serve"}, composeEnv(t.TempDir()))
	wantIgnoredWarning(t, log, composeIgnored)
	produceConsume(t, addr, "from-compose")
}

// wantIgnoredWarning checks that the log has exactly one line naming the
// properties samsa ignores, and that it names exactly want.
func wantIgnoredWarning(t *testing.T, log *syncBuffer, want string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "accepted and ignored") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d warning lines about ignored properties, want 1:\n%s", len(lines), log.String())
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.HasSuffix(lines[0], " properties="+want) {
		t.Errorf("warning line\n%s\nwant properties=%s", lines[0], want)
	}
}

// serveInProcess runs "samsa serve" in this process until the test ends
// and returns the address it serves on and its log.
func serveInProcess(t *testing.T, args, env []string) (string, *syncBuffer) {
	t.Helper()
	pr, pw := io.Pipe()
	sig := make(chan os.Signal, 1)
	code := make(chan int, 1)
	go func() {
		code <- run(args, env, io.Discard, pw, sig)
		pw.Close()
	}()
	log, addrCh, eof := readLog(pr)
	t.Cleanup(func() {
		sig <- os.Interrupt
		select {
		case c := <-code:
			if c != 0 {
				t.Errorf("exit status %d; log:\n%s", c, log.String())
			}
		case <-time.After(60 * time.Second):
			t.Errorf("no exit 60s after the signal")
		}
		<-eof
	})
	select {
	case addr := <-addrCh:
		return addr, log
	case c := <-code:
		<-eof
		code <- c
		t.Fatalf("samsa serve exited with %d; log:\n%s", c, log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("broker did not start; its log:\n%s", log.String())
	}
	return "", nil
}

// produceConsume writes records to a new topic and reads them back in a
// consumer group.
func produceConsume(t *testing.T, addr, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 20
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(topic+"-group"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(seen), n)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

// --help-config lists what samsa acts on and what it accepts and ignores,
// and exits 0 without starting a broker.
func TestServeHelpConfig(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run([]string{"serve", "--help-config"}, nil, &stdout, &stderr, make(chan os.Signal)); code != 0 {
		t.Fatalf("exit %d; stderr %q", code, stderr.String())
	}
	out := stdout.String()
	acting, ignored, ok := strings.Cut(out, "Accepted and ignored")
	if !ok || !strings.HasPrefix(acting, "Broker properties samsa acts on") {
		t.Fatalf("no sections:\n%s", out)
	}
	listed := func(section, name string) bool {
		for _, l := range strings.Split(section, "\n") {
			if strings.HasPrefix(l, name+" ") {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"broker.rack", "socket.send.buffer.bytes", "initial.broker.registration.timeout.ms", "producer.id.expiration.ms", "listeners", "etcd.endpoints", "controlled.shutdown.enable", "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.expected.audience", "sasl.server.callback.handler.class", "password.encoder.secret", "follower.replication.throttled.rate"} {
		if !listed(acting, name) || listed(ignored, name) {
			t.Errorf("%s is not listed as acting", name)
		}
	}
	for _, name := range []string{"num.recovery.threads.per.data.dir", "metric.reporters", "num.io.threads", "background.threads", "num.network.threads"} {
		if !listed(ignored, name) || listed(acting, name) {
			t.Errorf("%s is not listed as accepted and ignored", name)
		}
	}
}
