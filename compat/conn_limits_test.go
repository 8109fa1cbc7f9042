package compat

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// limitsBroker has a client listener apart from the inter-broker one,
// which the connection limits exempt.
func limitsBroker(t *testing.T, extra map[string]string) string {
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
	}
	for k, v := range extra {
		props[k] = v
	}
	return testutil.StartBroker(t, props).Addrs()[1]
}

func apiVersions(t *testing.T, c *admConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-compat", "1"
	if resp := c.roundTrip(req, 3).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
}

// max.connections.per.ip: a connection past the limit from one address is
// closed at once, as Kafka closes it; the others are served, and once one
// closes a new one is served again.
func TestMaxConnectionsPerIP(t *testing.T) {
	addr := limitsBroker(t, map[string]string{"max.connections.per.ip": "2"})
	a, b := admDial(t, addr), admDial(t, addr)
	apiVersions(t, a)
	apiVersions(t, b)
	c := admDial(t, addr)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a third connection from 127.0.0.1: read %v, want it closed (EOF)", err)
	}
	a.c.Close()
	testutil.Eventually(t, 10*time.Second, func() error {
		d := admDial(t, addr)
		d.c.SetReadDeadline(time.Now().Add(2 * time.Second))
		req := kmsg.NewPtrApiVersionsRequest()
		d.send(req)
		_, err := d.c.Read(make([]byte, 4))
		return err
	})
}

// max.connections: past it the broker serves no new connection on a
// client listener until one closes; then the waiting one is served.
func TestMaxConnections(t *testing.T) {
	addr := limitsBroker(t, map[string]string{"max.connections": "2"})
	a, b := admDial(t, addr), admDial(t, addr)
	apiVersions(t, a)
	apiVersions(t, b)
	c := admDial(t, addr) // held in the kernel's backlog
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req)
	// An observation window, not a wait for a condition.
	c.c.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := c.c.Read(make([]byte, 4)); err == nil || n > 0 {
		t.Fatalf("a third connection was served past max.connections=2 (%d bytes, %v)", n, err)
	}
	a.c.Close()
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c.c, make([]byte, 4)); err != nil {
		t.Fatalf("the waiting connection was not served after one closed: %v", err)
	}
}
