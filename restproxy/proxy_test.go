package restproxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// proxyBroker is a broker serving the REST proxy, with a franz-go client
// of it.
type proxyBroker struct {
	*testutil.Node
	url string // the proxy's, http://host:port
	cl  *kgo.Client
	adm *kadm.Client
}

func startProxy(t *testing.T, overrides map[string]string) *proxyBroker {
	t.Helper()
	props := map[string]string{"samsa.http.proxy.listener": "127.0.0.1:0"}
	for k, v := range overrides {
		props[k] = v
	}
	n := testutil.StartBroker(t, props)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &proxyBroker{Node: n, url: "http://" + n.ProxyAddr(), cl: cl, adm: kadm.NewClient(cl)}
}

func (b *proxyBroker) createTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := b.adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// answer is an HTTP answer: status, Content-Type, body and Location.
type answer struct {
	status   int
	ctype    string
	body     string
	location string
}

// do sends a request with the given headers (name, value pairs).
func do(t *testing.T, method, url, body string, headers ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), strings.TrimSpace(string(b)), resp.Header.Get("Location")}
}

// wantJSON fails unless got is JSON equal to want.
func wantJSON(t *testing.T, what string, got answer, status int, want string) {
	t.Helper()
	if got.status != status {
		t.Fatalf("%s: status %d, want %d (body %s)", what, got.status, status, got.body)
	}
	var g, w any
	if err := json.Unmarshal([]byte(got.body), &g); err != nil {
		t.Fatalf("%s: body %q: %v", what, got.body, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %q: %v", what, want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

const (
	ctV2     = "application/vnd.kafka.v2+json"
	ctJSON   = "application/vnd.kafka.json.v2+json"
	ctBinary = "application/vnd.kafka.binary.v2+json"
)

// jsonString is s as a JSON string.
func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}
