package kafkaref

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRenderPropsSortedAndEscaped(t *testing.T) {
	got := renderProps(map[string]string{
		"b.key":      "plain",
		"a.key":      `C:\dir`,
		"odd key=x":  " leading space",
		"listeners":  "PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2",
		"unicode":    "é😀",
		"multi.line": "a\nb",
	})
	want := strings.Join([]string{
		`a.key=C:\\dir`,
		`b.key=plain`,
		`listeners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2`,
		`multi.line=a\nb`,
		`odd\ key\=x=\ leading space`,
		`unicode=\u00e9\ud83d\ude00`,
		``,
	}, "\n")
	if got != want {
		t.Errorf("renderProps:\n%s\nwant:\n%s", got, want)
	}
}

func TestServerPropsExtraOverrides(t *testing.T) {
	p := serverProps("127.0.0.1:1", "127.0.0.1:2", "/d", map[string]string{
		"num.partitions":       "16",
		"log.segment.bytes":    "1073741824",
		"advertised.listeners": "PLAINTEXT://127.0.0.1:1",
	})
	wantProps(t, p, map[string]string{
		"num.partitions":                      "16",
		"log.segment.bytes":                   "1073741824",
		"process.roles":                       "broker,controller",
		"controller.quorum.bootstrap.servers": "127.0.0.1:2",
		"listeners":                           "PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2",
		"log.dirs":                            "/d",
	})
}

// wantProps reports every property of want that p does not hold.
func wantProps(t *testing.T, p, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
}

// TestClusterNodeProps: a node of a three-node cluster on addresses of the
// caller's listens on its own two, names every node a voter at its
// controller address, replicates the internal topics three ways, and
// takes the caller's properties over all of that.
func TestClusterNodeProps(t *testing.T) {
	addrs := []string{"10.0.0.11:9092", "10.0.0.12:9092", "10.0.0.13:9092"}
	ctrls := []string{"10.0.0.11:9093", "10.0.0.12:9093", "10.0.0.13:9093"}
	p := ClusterNodeProps(2, addrs, ctrls, "/d2", map[string]string{"min.insync.replicas": "2", "transaction.state.log.min.isr": "3"})
	wantProps(t, p, map[string]string{
		"node.id":                          "2",
		"process.roles":                    "broker,controller",
		"listeners":                        "PLAINTEXT://10.0.0.12:9092,CONTROLLER://10.0.0.12:9093",
		"advertised.listeners":             "PLAINTEXT://10.0.0.12:9092",
		"controller.quorum.voters":         "1@10.0.0.11:9093,2@10.0.0.12:9093,3@10.0.0.13:9093",
		"log.dirs":                         "/d2",
		"offsets.topic.replication.factor": "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "3",
		"min.insync.replicas":                      "2",
	})
	if v, ok := p["controller.quorum.bootstrap.servers"]; ok {
		t.Errorf("controller.quorum.bootstrap.servers = %q beside the static voters", v)
	}
}

func TestVersionFromBrokerJar(t *testing.T) {
	dir := t.TempDir()
	if got := Version(dir); got != "?" {
		t.Errorf("Version of an empty dir = %q, want ?", got)
	}
	for _, f := range []string{"kafka-clients-4.4.0.jar", "kafka_2.13-4.4.0.jar", "scala-library-2.13.18.jar"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := Version(dir); got != "4.4.0" {
		t.Errorf("Version = %q, want 4.4.0", got)
	}
	if got := versionOf("kafka_2.13-.jar"); got != "?" {
		t.Errorf("versionOf(no version) = %q, want ?", got)
	}
}

func TestModuleRootFindsSamsaGoMod(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("// c\nmodule github.com/samsa-io/samsa\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A nested module of another path does not stop the walk.
	nested := filepath.Join(root, "x", "y")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "x", "go.mod"), []byte("module example.com/samsa-io/samsa/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := moduleRootFrom(nested)
	if err != nil || got != root {
		t.Errorf("moduleRootFrom = %q, %v; want %q", got, err, root)
	}
	if _, err := moduleRootFrom(t.TempDir()); err == nil {
		t.Error("moduleRootFrom outside any samsa module: no error")
	}
	// The real one: this package sits in the module.
	if r, err := ModuleRoot(); err != nil {
		t.Errorf("ModuleRoot: %v", err)
	} else if _, err := os.Stat(filepath.Join(r, "internal", "kafkaref", "pom.xml")); err != nil {
		t.Errorf("ModuleRoot = %q holds no internal/kafkaref/pom.xml: %v", r, err)
	}
}

func TestJavaCommandLine(t *testing.T) {
	libs := t.TempDir()
	cmd := Java(context.Background(), libs, []string{"-Xmx64m"}, "org.apache.kafka.tools.TopicCommand", "--list", "--bootstrap-server", "h:1")
	want := []string{"-Xmx64m", "-Dlog4j2.configurationFile=" + filepath.Join(libs, log4j2Name),
		"-cp", filepath.Join(libs, "*"), "org.apache.kafka.tools.TopicCommand", "--list", "--bootstrap-server", "h:1"}
	if !slices.Equal(cmd.Args[1:], want) {
		t.Errorf("args = %q, want %q", cmd.Args[1:], want)
	}
	b, err := os.ReadFile(filepath.Join(libs, log4j2Name))
	if err != nil || !strings.Contains(string(b), "SYSTEM_ERR") {
		t.Errorf("log4j2 config not written to libs: %v", err)
	}
}

func TestLibsStampFollowsPom(t *testing.T) {
	root := t.TempDir()
	libs := filepath.Join(root, ".cache", "kafka-libs")
	if resolved(libs, pom) {
		t.Fatal("empty cache counts as resolved")
	}
	if err := os.MkdirAll(libs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libs, stampName), []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if resolved(libs, pom) {
		t.Error("a stamp of another pom counts as resolved")
	}
	if err := os.WriteFile(filepath.Join(libs, stampName), []byte(pomStamp(pom)), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Libs(context.Background(), root) // resolved: no mvn run
	if err != nil || got != libs {
		t.Errorf("Libs = %q, %v; want %q", got, err, libs)
	}
	if !strings.Contains(string(pom), "<artifactId>kafka-tools</artifactId>") {
		t.Error("embedded pom does not name kafka-tools")
	}
}

func TestTieredLibsOnTheClassPath(t *testing.T) {
	args := nodeArgs("/libs", 256, "/p", "/tiered")
	if i := slices.Index(args, "-cp"); i < 0 || args[i+1] != "/libs/*:/tiered/*" {
		t.Errorf("class path of %v: want the broker's jars before the tiered ones", args)
	}
	for _, want := range []string{"<artifactId>kafka-storage</artifactId>", "<classifier>test</classifier>", "<artifactId>kafka-clients</artifactId>"} {
		if !strings.Contains(string(tieredPom), want) {
			t.Errorf("tiered-pom.xml does not name %s", want)
		}
	}
	if p := TieredProps("/d"); p["remote.log.storage.manager.class.name"] != LocalTieredStorageClass || p["rsm.config.dir"] != "/d" {
		t.Errorf("TieredProps: %v", p)
	}
}

func TestClusterIDIsKRaftUUID(t *testing.T) {
	a, err := ClusterID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ClusterID()
	raw, err := base64.RawURLEncoding.DecodeString(a)
	if err != nil || len(raw) != 16 || a == b {
		t.Errorf("ClusterID = %q, %q (decoded %d bytes, %v)", a, b, len(raw), err)
	}
	// One in 64 random ids would start with '-'; 2000 draws meet it.
	for range 2000 {
		if id, _ := ClusterID(); id[0] == '-' {
			t.Fatalf("ClusterID %q starts with '-', which kafka-storage takes for an option", id)
		}
	}
}

func TestStartNeedsDirAndLibs(t *testing.T) {
	if _, err := Start(context.Background(), t.TempDir(), Options{}); err == nil {
		t.Error("Start without Dir: no error")
	}
	if _, err := Start(context.Background(), t.TempDir(), Options{Dir: t.TempDir()}); err == nil {
		t.Error("Start with an empty libs dir: no error")
	}
}

func TestWithListenersAddsSecuredListeners(t *testing.T) {
	if got := withListeners("a:1", "a:2", map[string]string{"x": "1"}, nil); len(got) != 1 {
		t.Errorf("no extra listeners changed the props: %v", got)
	}
	got := serverProps("a:1", "a:2", "/d", withListeners("a:1", "a:2",
		map[string]string{"listener.name.ssl.ssl.client.auth": "required"},
		map[string]string{"SSL": "a:3", "SASL_SSL": "a:4"}))
	for k, want := range map[string]string{
		"listeners":                         "PLAINTEXT://a:1,CONTROLLER://a:2,SASL_SSL://a:4,SSL://a:3",
		"advertised.listeners":              "PLAINTEXT://a:1,SASL_SSL://a:4,SSL://a:3",
		"listener.security.protocol.map":    "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
		"listener.name.ssl.ssl.client.auth": "required",
		"inter.broker.listener.name":        "PLAINTEXT",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}
