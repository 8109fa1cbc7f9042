package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestAPIAnswers: the console's JSON API answers bad input with 400, an
// unknown topic or group with 404, and refuses a change another site's
// page could make a browser send (a form post, a foreign Origin).
func TestAPIAnswers(t *testing.T) {
	n, _ := startHTTPBroker(t)
	base := "http://" + n.HTTPAddr() + "/api"
	do := func(method, path, contentType, origin, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const js = "application/json"
	for _, c := range []struct {
		method, path, contentType, origin, body string
		status                                  int
		want                                    string
	}{
		{"GET", "/topics/nope", "", "", "", 404, "unknown topic"},
		{"GET", "/groups/nope", "", "", "", 404, "unknown group"},
		{"GET", "/topics/nope/messages?partition=x", "", "", "", 400, "partition"},
		{"POST", "/topics", "application/x-www-form-urlencoded", "", "name=evil", 403, "application/json"},
		{"POST", "/topics", js, "http://evil.example", `{"name":"evil"}`, 403, "cross-origin"},
		{"DELETE", "/topics/x", "text/plain", "", "", 403, "application/json"},
		{"POST", "/topics", js, "", `{"nom":"typo"}`, 400, "unknown field"},
		{"POST", "/topics", js, "http://" + n.HTTPAddr(), `{"name":"ok","partitions":2}`, 200, `"created":"ok"`},
		{"POST", "/topics", js, "", `{"name":"ok"}`, 502, "TOPIC_ALREADY_EXISTS"},
		{"POST", "/topics/ok/configs", js, "", `{"set":{"retention.ms":"nonsense"}}`, 502, "INVALID_CONFIG"},
		{"POST", "/groups/g/seek", js, "", `{"to":"sideways"}`, 400, "to:"},
	} {
		status, body := do(c.method, c.path, c.contentType, c.origin, c.body)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.path, status, strings.TrimSpace(body), c.status, c.want)
		}
	}
}

// TestConsoleUsesThePlaintextListener: with a SASL listener first, the
// console's client dials the PLAINTEXT one.
func TestConsoleUsesThePlaintextListener(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                  "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name": "PLAINTEXT",
		"sasl.enabled.mechanisms":    "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b" user_a="b";`,
		"samsa.http.listener": "127.0.0.1:0",
	})
	resp, err := http.Get("http://" + n.HTTPAddr() + "/api/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"healthy":true`) {
		t.Fatalf("GET /api/cluster: %s %s", resp.Status, body)
	}
}

// TestConsoleLogin: with only a SASL_PLAINTEXT listener, the console asks
// its users to log in (HTTP Basic) and talks to Kafka as each of them: a
// user of the listener's JAAS config gets through, a wrong password or
// none gets 401 with a Basic challenge; /metrics needs no login.
func TestConsoleLogin(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"samsa.http.listener":                                 "127.0.0.1:0",
	})
	get := func(path, user, pass string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+n.HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	for _, c := range []struct {
		path, user, pass string
		status           int
		want             string
	}{
		{"/", "", "", 401, "log in"},
		{"/api/cluster", "", "", 401, "log in"},
		{"/api/cluster", "alice", "wrong", 401, "log in"},
		{"/api/cluster", "alice", "alice-secret", 200, `"healthy":true`},
		{"/api/topics", "alice", "alice-secret", 200, "["},
		{"/", "alice", "alice-secret", 200, "samsa console"},
		{"/metrics", "", "", 200, "kafka_server_replicamanager_leadercount"},
	} {
		status, challenge, body := get(c.path, c.user, c.pass)
		if status != c.status || !strings.Contains(body, c.want) || (status == 401) != strings.HasPrefix(challenge, "Basic ") {
			t.Errorf("GET %s as %q/%q: %d (%q) %.200s, want %d with %q", c.path, c.user, c.pass, status, challenge, body, c.status, c.want)
		}
	}
}
