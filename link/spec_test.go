package link

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name    string
		cfg     map[string]string
		wantErr string
	}{
		{"minimal", map[string]string{KeyBootstrap: "h:9092", KeyTopics: "a.*,b"}, ""},
		{"no bootstrap", map[string]string{KeyTopics: "a"}, "source.bootstrap.servers is required"},
		{"bad regex", map[string]string{KeyBootstrap: "h:1", KeyTopics: "a("}, "regex"},
		{"unknown key", map[string]string{KeyBootstrap: "h:1", "nope": "1"}, "unknown link config"},
		{"unknown source property", map[string]string{KeyBootstrap: "h:1", "source.acks": "all"}, "not supported"},
		{"bad state", map[string]string{KeyBootstrap: "h:1", KeyState: "stopped"}, "expected active or paused"},
		{"sasl without user", map[string]string{KeyBootstrap: "h:1", "source.security.protocol": "SASL_PLAINTEXT"}, "no username"},
		{"sasl scram", map[string]string{KeyBootstrap: "h:1", "source.security.protocol": "SASL_PLAINTEXT", "source.sasl.mechanism": "SCRAM-SHA-512",
			"source.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p\"q";`}, ""},
		{"jks", map[string]string{KeyBootstrap: "h:1", "source.security.protocol": "SSL", "source.ssl.truststore.type": "JKS"}, "only PEM"},
		{"bad refresh", map[string]string{KeyBootstrap: "h:1", KeyRefresh: "1"}, "at least 10"},
		{"acls without filters", map[string]string{KeyBootstrap: "h:1", KeySyncACLs: "true"}, "sync.acls needs acl.filters"},
		{"acls", map[string]string{KeyBootstrap: "h:1", KeySyncACLs: "true", KeyACLFilters: `{"aclFilters":[{"resourceFilter":{"resourceType":"topic","name":"orders","patternType":"match"},"accessFilter":{"operation":"any","permissionType":"allow"}},{"resourceFilter":{"resourceType":"transactional_id"},"accessFilter":{"principal":"User:a"}}]}`}, ""},
		{"acl filter bad type", map[string]string{KeyBootstrap: "h:1", KeyACLFilters: `{"aclFilters":[{"resourceFilter":{"resourceType":"table"}}]}`}, `resourceType "table"`},
		{"acl filter unknown field", map[string]string{KeyBootstrap: "h:1", KeyACLFilters: `{"aclFilters":[{"resourceFilter":{"type":"topic"}}]}`}, "unknown field"},
		{"acl filters empty", map[string]string{KeyBootstrap: "h:1", KeyACLFilters: `{"aclFilters":[]}`}, "no filter"},
		{"no acls", map[string]string{KeyBootstrap: "h:1", KeySyncACLs: "false", KeySyncCfgs: "true"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSpec("l", tt.cfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ParseSpec: %v, want %q", err, tt.wantErr)
			}
		})
	}
	s, err := ParseSpec("l", map[string]string{KeyBootstrap: "h:1", KeyTopics: "orders.*, pay", KeyState: StatePaused})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"orders": true, "orders-eu": true, "pay": true, "payments": false, "xorders": false} {
		if s.MatchesTopic(name) != want {
			t.Errorf("MatchesTopic(%q) = %v", name, !want)
		}
	}
	if !s.Paused {
		t.Error("not paused")
	}
}

// batch is a batch header of n records from base, without records.
func batch(base int64, n int32) []byte {
	b := make([]byte, 61)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[8:], 49)
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	return b
}

func TestBatchesFrom(t *testing.T) {
	var all []byte
	for _, b := range [][]byte{batch(0, 5), batch(5, 5), batch(20, 1)} {
		all = append(all, b...)
	}
	for _, tt := range []struct {
		offset int64
		want   int // batches
	}{{0, 3}, {4, 3}, {5, 2}, {9, 2}, {10, 1}, {21, 0}} {
		if got := len(batchesFrom(all, tt.offset)) / 61; got != tt.want {
			t.Errorf("batchesFrom(%d): %d batches, want %d", tt.offset, got, tt.want)
		}
	}
	if got := len(batchesFrom(all[:len(all)-3], 0)) / 61; got != 2 {
		t.Errorf("a partial last batch: %d batches", got)
	}
}
