package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/testutil"
)

// getBody fetches a URL and returns its status and body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// samsa.http.pprof serves Go's profiles beside the metrics; without it
// the listener serves none.
func TestHTTPPprofBehindItsSetting(t *testing.T) {
	on := testutil.StartBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0", "samsa.http.pprof": "true"})
	code, body := getBody(t, "http://"+on.HTTPAddr()+"/debug/pprof/goroutine?debug=1")
	if code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("with samsa.http.pprof: GET /debug/pprof/goroutine answered %d:\n%.300s", code, body)
	}
	if code, body := getBody(t, "http://"+on.HTTPAddr()+"/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile:") {
		t.Fatalf("with samsa.http.pprof: GET /debug/pprof/heap answered %d:\n%.300s", code, body)
	}
	off := testutil.StartBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	if code, body := getBody(t, "http://"+off.HTTPAddr()+"/debug/pprof/goroutine?debug=1"); strings.Contains(body, "goroutine profile:") {
		t.Fatalf("without samsa.http.pprof: GET /debug/pprof/goroutine answered %d with a profile", code)
	}
}
