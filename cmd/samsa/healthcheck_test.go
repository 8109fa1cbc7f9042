package main

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestHealthcheck: `samsa healthcheck` (the compose file's broker health
// check) exits 0 against a serving broker and 1 where none answers.
func TestHealthcheck(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"healthcheck", "--bootstrap-server", n.Addr()}, nil, &stdout, &stderr, make(chan os.Signal)); code != 0 {
		t.Fatalf("healthcheck of a serving broker: exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "serves") {
		t.Errorf("stdout %q", stdout.String())
	}

	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stderr.Reset()
	if code := run([]string{"healthcheck", "--bootstrap-server", addr, "--timeout", "2s"}, nil, &stdout, &stderr, make(chan os.Signal)); code != 1 {
		t.Fatalf("healthcheck of no broker: exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "samsa: healthcheck") {
		t.Errorf("stderr %q", stderr.String())
	}

	// Something that is not a Kafka broker: it closes at once.
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if code := run([]string{"healthcheck", "--bootstrap-server", l.Addr().String(), "--timeout", "2s"}, nil, &stdout, &stderr, make(chan os.Signal)); code != 1 {
		t.Fatalf("healthcheck of a closing listener: exit %d, want 1", code)
	}
}
