package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustNew(t *testing.T, m map[string]string) *Props {
	t.Helper()
	p, err := New(m)
	if err != nil {
		t.Fatalf("New(%v): %v", m, err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	p := mustNew(t, nil)
	checks := []struct {
		key, want string
	}{
		{"num.partitions", "1"},
		{"default.replication.factor", "1"},
		{"auto.create.topics.enable", "true"},
		{"delete.topic.enable", "true"},
		{"log.segment.bytes", "1073741824"},
		{"log.roll.hours", "168"},
		{"log.retention.hours", "168"},
		{"log.retention.bytes", "-1"},
		{"log.retention.check.interval.ms", "300000"},
		{"message.max.bytes", "1048588"},
		{"socket.request.max.bytes", "104857600"},
		{"log.flush.interval.messages", "9223372036854775807"},
		{"log.index.interval.bytes", "4096"},
		{"min.insync.replicas", "1"},
		{"offsets.topic.num.partitions", "50"},
		{"connections.max.idle.ms", "600000"},
		{"replica.lag.time.max.ms", "30000"},
		{"etcd.prefix", "/samsa"},
		{"samsa.fetch.sendfile", "true"},
		{"log.retention.ms", ""}, // null
	}
	for _, c := range checks {
		if got := p.String(c.key); got != c.want {
			t.Errorf("%s = %q, want %q", c.key, got, c.want)
		}
	}
	if p.NodeID() != 1 {
		t.Errorf("NodeID = %d, want 1", p.NodeID())
	}
	if got := p.LogDirs(); !reflect.DeepEqual(got, []string{DefaultLogDir}) {
		t.Errorf("LogDirs = %v", got)
	}
	want := []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, Protocol: "PLAINTEXT"}}
	if got := must(p.Listeners()); !reflect.DeepEqual(got, want) {
		t.Errorf("Listeners = %+v", got)
	}
	if got := must(p.AdvertisedListeners()); !reflect.DeepEqual(got, want) {
		t.Errorf("AdvertisedListeners = %+v", got)
	}
	if p.RetentionMs() != 604800000 || p.RollMs() != 604800000 || p.RollJitterMs() != 0 {
		t.Errorf("retention %d roll %d jitter %d", p.RetentionMs(), p.RollMs(), p.RollJitterMs())
	}
	if p.FlushMs() != 1<<63-1 {
		t.Errorf("FlushMs = %d", p.FlushMs())
	}
	if p.Int64("log.flush.interval.messages") != 1<<63-1 || p.Int32("message.max.bytes") != 1048588 || !p.Bool("auto.create.topics.enable") {
		t.Error("typed accessors")
	}
	if p.Source("num.partitions") != kmsg.ConfigSourceDefaultConfig || p.Origin("num.partitions") != "default" {
		t.Error("source of a default")
	}
	if len(p.EtcdEndpoints()) != 0 {
		t.Error("etcd endpoints default")
	}
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, `
# a server.properties
num.partitions=3
log.retention.hours : 24
default.replication.factor 1
log.dirs=/data/a,\
         /data/b
`)
	env := []string{"KAFKA_NUM_PARTITIONS=5", "KAFKA_LOG_SEGMENT_BYTES=2097152", "PATH=/bin", "KAFKA_HEAP_OPTS=-Xmx1G"}
	p, err := Load(file, []string{"num.partitions=7", "log.roll.ms = 1000"}, env)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, want, origin string
	}{
		{"num.partitions", "7", "--override"},
		{"log.segment.bytes", "2097152", "environment variable KAFKA_LOG_SEGMENT_BYTES"},
		{"log.retention.hours", "24", file + " line 4"},
		{"log.dirs", "/data/a,/data/b", file + " line 6"},
		{"log.roll.ms", "1000", "--override"},
	}
	for _, tt := range tests {
		if got := p.String(tt.key); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
		}
		if got := p.Origin(tt.key); got != tt.origin {
			t.Errorf("origin of %s = %q, want %q", tt.key, got, tt.origin)
		}
		if p.Source(tt.key) != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("source of %s", tt.key)
		}
	}
	if got := p.LogDirs(); !reflect.DeepEqual(got, []string{"/data/a", "/data/b"}) {
		t.Errorf("LogDirs = %v", got)
	}
	if p.RetentionMs() != 24*3600*1000 || p.RollMs() != 1000 {
		t.Errorf("RetentionMs %d RollMs %d", p.RetentionMs(), p.RollMs())
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		env       []string
		overrides []string
		sentinel  error
		contains  []string
	}{
		{name: "unknown in file", file: "foo.bar=1\n", sentinel: ErrUnknownConfig,
			contains: []string{`config: unknown property "foo.bar"`, "line 1"}},
		{name: "unknown override", overrides: []string{"foo.bar=1"}, sentinel: ErrUnknownConfig,
			contains: []string{`unknown property "foo.bar"`, "--override"}},
		{name: "unknown env", env: []string{"KAFKA_FOO_BAR=1"}, sentinel: ErrUnknownConfig,
			contains: []string{`unknown property "foo.bar"`, "KAFKA_FOO_BAR"}},
		{name: "override without =", overrides: []string{"num.partitions"},
			contains: []string{`--override "num.partitions"`}},
		{name: "not an int", overrides: []string{"num.partitions=abc"}, sentinel: ErrInvalidConfig,
			contains: []string{`"abc"`, `"num.partitions"`}},
		{name: "int out of range", overrides: []string{"message.max.bytes=99999999999"}, sentinel: ErrInvalidConfig,
			contains: []string{`"message.max.bytes"`, "Not a number of type INT"}},
		{name: "below minimum", overrides: []string{"num.partitions=0"}, sentinel: ErrInvalidConfig,
			contains: []string{`"num.partitions"`, "at least 1"}},
		{name: "bad bool", file: "auto.create.topics.enable=yes", sentinel: ErrInvalidConfig,
			contains: []string{`"yes"`, `"auto.create.topics.enable"`}},
		{name: "bad enum", overrides: []string{"log.message.timestamp.type=Now"}, sentinel: ErrInvalidConfig,
			contains: []string{`"log.message.timestamp.type"`, "CreateTime"}},
		{name: "bad listener", overrides: []string{"listeners=localhost:9092"}, sentinel: ErrInvalidConfig,
			contains: []string{`"listeners"`, "NAME://host:port"}},
		{name: "bad listener port", overrides: []string{"listeners=PLAINTEXT://:99999"}, sentinel: ErrInvalidConfig,
			contains: []string{`"listeners"`, "invalid port"}},
		{name: "listener without protocol", overrides: []string{"listeners=INTERNAL://:9092"}, sentinel: ErrInvalidConfig,
			contains: []string{`"listeners"`, "INTERNAL", "listener.security.protocol.map"}},
		{name: "advertised wildcard", overrides: []string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, sentinel: ErrInvalidConfig,
			contains: []string{`"advertised.listeners"`, "0.0.0.0"}},
		{name: "advertised unknown name", overrides: []string{"listeners=PLAINTEXT://:9092", "advertised.listeners=SSL://h:1", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:PLAINTEXT"}, sentinel: ErrInvalidConfig,
			contains: []string{`"advertised.listeners"`, "SSL is not in listeners"}},
		{name: "node and broker id differ", overrides: []string{"node.id=1", "broker.id=2"}, sentinel: ErrInvalidConfig,
			contains: []string{`"broker.id"`, "node.id 1"}},
		{name: "bad etcd endpoint", overrides: []string{"etcd.endpoints=localhost:2379"}, sentinel: ErrInvalidConfig,
			contains: []string{`"etcd.endpoints"`}},
		{name: "authorizer not known", overrides: []string{"authorizer.class.name=com.example.MyAuthorizer"}, sentinel: ErrInvalidConfig,
			contains: []string{`"authorizer.class.name"`, "must be one of"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := ""
			if tt.file != "" {
				file = writeFile(t, tt.file)
			}
			_, err := Load(file, tt.overrides, tt.env)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %q does not wrap %v", err, tt.sentinel)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not contain %q", err, c)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.properties"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "nope.properties") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	_, err := Load("", []string{"a.b=1", "num.partitions=x"}, nil)
	if err == nil || !strings.Contains(err.Error(), `"a.b"`) || !strings.Contains(err.Error(), `"num.partitions"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRetentionPrecedence(t *testing.T) {
	tests := []struct {
		set  map[string]string
		want int64
	}{
		{nil, 168 * 3600000},
		{map[string]string{"log.retention.hours": "1"}, 3600000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, 120000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "5"}, 5},
		{map[string]string{"log.retention.minutes": "2", "log.retention.ms": "-1"}, -1},
		{map[string]string{"log.retention.hours": "-1"}, -1},
		{map[string]string{"log.retention.minutes": "-5"}, -1},
	}
	for _, tt := range tests {
		p := mustNew(t, tt.set)
		if got := p.RetentionMs(); got != tt.want {
			t.Errorf("%v: RetentionMs = %d, want %d", tt.set, got, tt.want)
		}
		if got := p.TopicConfigs(nil)["retention.ms"]; got != itoa(tt.want) {
			t.Errorf("%v: retention.ms = %s, want %d", tt.set, got, tt.want)
		}
	}
}

func TestRollAndFlushPrecedence(t *testing.T) {
	p := mustNew(t, map[string]string{"log.roll.hours": "2", "log.roll.jitter.hours": "1", "log.flush.scheduler.interval.ms": "3000"})
	if p.RollMs() != 2*3600000 || p.RollJitterMs() != 3600000 || p.FlushMs() != 3000 {
		t.Fatalf("roll %d jitter %d flush %d", p.RollMs(), p.RollJitterMs(), p.FlushMs())
	}
	p = mustNew(t, map[string]string{"log.roll.hours": "2", "log.roll.ms": "10", "log.roll.jitter.ms": "3", "log.flush.interval.ms": "7", "log.flush.scheduler.interval.ms": "3000"})
	if p.RollMs() != 10 || p.RollJitterMs() != 3 || p.FlushMs() != 7 {
		t.Fatalf("roll %d jitter %d flush %d", p.RollMs(), p.RollJitterMs(), p.FlushMs())
	}
}

func TestNodeID(t *testing.T) {
	tests := []struct {
		set  map[string]string
		want int32
	}{
		{nil, 1},
		{map[string]string{"node.id": "4"}, 4},
		{map[string]string{"broker.id": "5"}, 5},
		{map[string]string{"broker.id": "6", "node.id": "6"}, 6},
		{map[string]string{"broker.id": "-1", "node.id": "2"}, 2},
	}
	for _, tt := range tests {
		if got := mustNew(t, tt.set).NodeID(); got != tt.want {
			t.Errorf("%v: NodeID = %d, want %d", tt.set, got, tt.want)
		}
	}
}

func TestListeners(t *testing.T) {
	p := mustNew(t, map[string]string{
		"listeners":                      "PLAINTEXT://:9092,CONTROLLER://:9093,plaintext_host://0.0.0.0:0",
		"controller.listener.names":      "CONTROLLER",
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
	})
	want := []Listener{
		{Name: "PLAINTEXT", Host: "", Port: 9092, Protocol: "PLAINTEXT"},
		{Name: "PLAINTEXT_HOST", Host: "0.0.0.0", Port: 0, Protocol: "PLAINTEXT"},
	}
	if got := must(p.Listeners()); !reflect.DeepEqual(got, want) {
		t.Fatalf("Listeners = %+v", got)
	}
	if got := must(p.Listeners())[0].Addr(); got != ":9092" {
		t.Errorf("Addr = %q", got)
	}
	adv := must(p.AdvertisedListeners())
	if len(adv) != 2 || adv[0].Host != "127.0.0.1" || adv[1].Host != "127.0.0.1" || adv[1].Port != 0 {
		t.Fatalf("AdvertisedListeners = %+v", adv)
	}
	if got := p.InterBrokerListener(); got.Name != "PLAINTEXT" {
		t.Errorf("InterBrokerListener = %+v", got)
	}

	p = mustNew(t, map[string]string{
		"listeners":                      "INTERNAL://0.0.0.0:29092,EXTERNAL://0.0.0.0:9092",
		"advertised.listeners":           "INTERNAL://kafka:29092,EXTERNAL://localhost:9092",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
	})
	adv = must(p.AdvertisedListeners())
	if len(adv) != 2 || adv[0].String() != "INTERNAL://kafka:29092" || adv[1].String() != "EXTERNAL://localhost:9092" {
		t.Fatalf("AdvertisedListeners = %+v", adv)
	}
	if got := p.InterBrokerListener(); got.Host != "kafka" {
		t.Errorf("InterBrokerListener = %+v", got)
	}
	if got := (Listener{Name: "P", Host: "::1", Port: 1}).String(); got != "P://[::1]:1" {
		t.Errorf("String = %q", got)
	}
}

// A docker-compose environment written for apache/kafka loads unchanged.
func TestApacheKafkaImageEnvironment(t *testing.T) {
	env := []string{
		"KAFKA_NODE_ID=1",
		"KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092",
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
		"KAFKA_LOG_DIRS=/var/lib/kafka/data",
		"KAFKA_HEAP_OPTS=-Xmx512m",
		"KAFKA_JMX_PORT=9101",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw",
		"HOME=/root",
	}
	p, err := Load("", nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if p.NodeID() != 1 || p.Int32("num.partitions") != 3 || p.String("cluster.id") != "4L6g3nShT-eMCtK--X86sw" {
		t.Error("values from the environment")
	}
	// listeners derived from the advertised ones, as the image's configure script does
	want := []Listener{{Name: "PLAINTEXT", Host: "0.0.0.0", Port: 9092, Protocol: "PLAINTEXT"}}
	if got := must(p.Listeners()); !reflect.DeepEqual(got, want) {
		t.Errorf("Listeners = %+v", got)
	}
	if got := must(p.AdvertisedListeners()); len(got) != 1 || got[0].String() != "PLAINTEXT://localhost:9092" {
		t.Errorf("AdvertisedListeners = %+v", got)
	}
	if got := p.LogDirs(); !reflect.DeepEqual(got, []string{"/var/lib/kafka/data"}) {
		t.Errorf("LogDirs = %v", got)
	}
}

func TestWith(t *testing.T) {
	p := mustNew(t, map[string]string{"num.partitions": "3", "log.dirs": "/a"})
	q, err := p.With(map[string]string{"num.partitions": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Int32("num.partitions") != 4 || q.String("log.dirs") != "/a" || p.Int32("num.partitions") != 3 {
		t.Fatal("With")
	}
	if _, err := p.With(map[string]string{"x.y": "1"}); !errors.Is(err, ErrUnknownConfig) {
		t.Fatalf("err = %v", err)
	}
	if got := q.Explicit(); !reflect.DeepEqual(got, map[string]string{"num.partitions": "4", "log.dirs": "/a"}) {
		t.Fatalf("Explicit = %v", got)
	}
}

func TestTablesAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range brokerDefs {
		if seen[d.Name] {
			t.Errorf("broker property %s defined twice", d.Name)
		}
		seen[d.Name] = true
		if d.Default != nil && d.Name != "log.dirs" {
			_, check, _ := propType(d.Name) // samsa's check and Kafka's validator
			if _, err := checkValue(d.Type, check, *d.Default); err != nil && !(d.Name == "listeners" || d.Type == tList) {
				t.Errorf("default %q of %s does not validate: %v", *d.Default, d.Name, err)
			}
		}
		if d.Doc == "" {
			t.Errorf("%s has no doc", d.Name)
		}
	}
	seen = map[string]bool{}
	for _, d := range topicDefs {
		if seen[d.Name] {
			t.Errorf("topic config %s defined twice", d.Name)
		}
		seen[d.Name] = true
		if _, err := checkValue(d.Type, d.check, d.Default); err != nil && !d.internal {
			t.Errorf("default %q of %s does not validate: %v", d.Default, d.Name, err)
		}
		for i, s := range d.Synonyms {
			bd, ok := brokerIndex[s.Name]
			if _, kafkaOnly := kafkaIndex[s.Name]; !ok && kafkaOnly {
				continue
			}
			if !ok {
				t.Errorf("synonym %s of %s is not a broker property", s.Name, d.Name)
				continue
			}
			if i == 0 && bd.Default != nil && scaled(&d, 0, *bd.Default) != d.Default {
				t.Errorf("%s default %s differs from %s default %s", d.Name, d.Default, s.Name, *bd.Default)
			}
		}
		if len(d.scale) != 0 && len(d.scale) != len(d.Synonyms) {
			t.Errorf("%s: scale and synonyms differ in length", d.Name)
		}
	}
	// defaults through the synonyms equal Kafka's topic defaults
	p := mustNew(t, nil)
	for k, v := range p.TopicConfigs(nil) {
		if d := topicIndex[k]; d.Default != v {
			t.Errorf("effective default of %s = %s, want %s", k, v, d.Default)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func must(ls []Listener, err error) []Listener {
	if err != nil {
		panic(err)
	}
	return ls
}

func TestZeroPropsListeners(t *testing.T) {
	var p Props
	if _, err := p.Listeners(); err == nil {
		t.Error("Listeners of a zero Props")
	}
	if _, err := p.AdvertisedListeners(); err == nil {
		t.Error("AdvertisedListeners of a zero Props")
	}
	if !IsListTopicConfig("cleanup.policy") || IsListTopicConfig("retention.ms") || IsListTopicConfig("nope") {
		t.Error("IsListTopicConfig")
	}
}

// The keys of the server.properties that Kafka 4.x ships for a combined
// broker+controller load, and give a broker on 9092.
func TestKafkaServerProperties(t *testing.T) {
	file := writeFile(t, `
############################# Server Basics #############################
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`)
	p, err := Load(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ls := must(p.Listeners())
	adv := must(p.AdvertisedListeners())
	if len(ls) != 1 || ls[0].Addr() != ":9092" || len(adv) != 1 || adv[0].String() != "PLAINTEXT://localhost:9092" {
		t.Fatalf("listeners %v advertised %v", ls, adv)
	}
	if p.NodeID() != 1 || p.LogDirs()[0] != "/tmp/kraft-combined-logs" || p.RetentionMs() != 604800000 {
		t.Fatal("values")
	}
}

// A server.properties written for Kafka 3 names properties Kafka 4
// removed; Kafka 4 starts with them, and so does samsa: accepted, ignored
// and named in the start-up warning. A name no Kafka knows still stops it.
func TestPropertiesRemovedInKafka4AreAcceptedAndIgnored(t *testing.T) {
	p, err := New(map[string]string{
		"leader.imbalance.per.broker.percentage": "10",
		"zookeeper.connect":                      "localhost:2181",
		"log.message.format.version":             "2.8",
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ign := p.Ignored()
	for _, k := range []string{"leader.imbalance.per.broker.percentage", "log.message.format.version", "zookeeper.connect"} {
		if !slices.Contains(ign, k) {
			t.Errorf("%s not among the ignored properties %v", k, ign)
		}
	}
	if _, err := New(map[string]string{"leader.imbalance.per.broker.percentag": "10"}); err == nil {
		t.Error("a misspelt name was accepted")
	}
}

// A per-listener form of a setting samsa acts on overrides the broker-wide
// value for that listener only, is checked as the setting is, and is not
// reported as ignored.
func TestListenerOverrides(t *testing.T) {
	p, err := New(map[string]string{
		"listeners":                         "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"ssl.client.auth":                   "requested",
		"listener.name.ssl.ssl.client.auth": "required",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ListenerString("SSL", "ssl.client.auth"); got != "required" {
		t.Errorf("SSL: ssl.client.auth %q", got)
	}
	if got := p.ListenerString("PLAINTEXT", "ssl.client.auth"); got != "requested" {
		t.Errorf("PLAINTEXT: ssl.client.auth %q", got)
	}
	if got := p.Ignored(); len(got) != 0 {
		t.Errorf("Ignored = %v", got)
	}
	if _, err := New(map[string]string{"listener.name.ssl.ssl.client.auth": "sometimes"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a bad per-listener ssl.client.auth: %v", err)
	}
}

// cordoned.log.dirs (KIP-1066): entries of log.dirs, or * for all of
// them; anything else is refused with Kafka's message.
func TestCordonedLogDirs(t *testing.T) {
	tests := []struct {
		value string
		want  []string
		err   string
	}{
		{"", nil, ""},
		{"/data/b", []string{"/data/b"}, ""},
		{"/data/b/,/data/a", []string{"/data/b", "/data/a"}, ""},
		{"*", []string{"/data/a", "/data/b"}, ""},
		{"*,/data/a", nil, "When cordoned.log.dirs is set to *, it must not contain other values"},
		{"/data/c,/data/a,/data/d", nil, "All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /data/c, /data/d"},
	}
	for _, tt := range tests {
		p, err := New(map[string]string{"log.dirs": "/data/a,/data/b", "cordoned.log.dirs": tt.value})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.CordonedLogDirs()
		msg := ""
		if ce := (*CordonedLogDirsError)(nil); errors.As(err, &ce) {
			msg = ce.Msg
		}
		if msg != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("cordoned.log.dirs=%q: %v %v, want %v %q", tt.value, got, err, tt.want, tt.err)
		}
	}
}
