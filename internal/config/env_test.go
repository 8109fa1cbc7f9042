package config

import "testing"

func TestEnvKey(t *testing.T) {
	tests := []struct {
		env  string
		want string
		ok   bool
	}{
		{"KAFKA_ADVERTISED_LISTENERS", "advertised.listeners", true},
		{"KAFKA_NODE_ID", "node.id", true},
		{"KAFKA_LOG_RETENTION_HOURS", "log.retention.hours", true},
		{"KAFKA_A_B_C", "a.b.c", true},
		{"KAFKA_FOO__BAR", "foo_bar", true},
		{"KAFKA_FOO___BAR", "foo-bar", true},
		{"KAFKA_CFG_NUM_PARTITIONS", "num.partitions", true},
		{"CLUSTER_ID", "cluster.id", true},
		{"KAFKA_HEAP_OPTS", "", false},
		{"KAFKA_OPTS", "", false},
		{"KAFKA_JMX_PORT", "", false},
		{"KAFKA_JMX_OPTS", "", false},
		{"KAFKA_LOG4J_ROOT_LOGLEVEL", "", false},
		{"KAFKA_LOG4J_LOGGERS", "", false},
		{"KAFKA_VERSION", "", false},
		{"KAFKA_HOME", "", false},
		{"KAFKA_JVM_PERFORMANCE_OPTS", "", false},
		{"KAFKA_", "", false},
		{"PATH", "", false},
		{"KAFKAX_Y", "", false},
	}
	for _, tt := range tests {
		got, ok := envKey(tt.env)
		if got != tt.want || ok != tt.ok {
			t.Errorf("envKey(%q) = %q, %v; want %q, %v", tt.env, got, ok, tt.want, tt.ok)
		}
	}
}

func TestWildcardHosts(t *testing.T) {
	got := wildcardHosts("PLAINTEXT://kafka:29092, PLAINTEXT_HOST://localhost:9092,X://[::1]:1")
	want := "PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092,X://0.0.0.0:1"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// The Java system properties samsa acts on come from KAFKA_OPTS' -D
// options; the JVM's other options are left alone.
func TestEnvKafkaOptsSystemProperties(t *testing.T) {
	p, err := Load("", nil, []string{"KAFKA_OPTS=-Xss2m -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file:///jwks.json,https://idp/keys -Dother.property=x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.List("org.apache.kafka.sasl.oauthbearer.allowed.urls"); len(got) != 2 || got[0] != "file:///jwks.json" || got[1] != "https://idp/keys" {
		t.Errorf("allowed urls %q", got)
	}
	if ign := p.Ignored(); len(ign) != 0 {
		t.Errorf("Ignored = %v", ign)
	}
}
