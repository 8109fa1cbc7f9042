package compat

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// limitsBroker has a client listener apart from the inter-broker one,
// which the connection limits exempt.
func limitsBroker(t *testing.T, extra map[string]string) string {
	return limitsBrokerAddrs(t, extra)[1]
}

// limitsBrokerAddrs is limitsBroker's listeners: the inter-broker one,
// then the client one.
func limitsBrokerAddrs(t *testing.T, extra map[string]string) []string {
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
	}
	for k, v := range extra {
		props[k] = v
	}
	return testutil.StartBroker(t, props).Addrs()
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

// max.connections.per.ip.overrides: an address (or a host name, resolved)
// gets its own limit instead of max.connections.per.ip.
func TestMaxConnectionsPerIPOverrides(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			addr := limitsBroker(t, map[string]string{"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "10.1.2.3:0, " + host + ":3"})
			for range 3 {
				apiVersions(t, admDial(t, addr))
			}
			d := admDial(t, addr)
			d.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := d.c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("a fourth connection from 127.0.0.1 (override 3): read %v, want it closed (EOF)", err)
			}
		})
	}
}

// An override that is not host:limit is refused as Kafka refuses it.
func TestMaxConnectionsPerIPOverridesInvalid(t *testing.T) {
	adm := newAdmin(t, testutil.StartBroker(t, nil).Addr())
	for _, v := range []string{"127.0.0.1", "127.0.0.1:x", "127.0.0.1:-1"} {
		rs, err := adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.connections.per.ip.overrides", Value: strp(v)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 || !errors.Is(rs[0].Err, kerr.InvalidConfig) {
			t.Errorf("max.connections.per.ip.overrides=%q: %+v, want INVALID_CONFIG", v, rs)
		}
	}
}

// max.connection.creation.rate (KIP-612): past the rate the broker accepts
// no new connection on a client listener until the rate allows it (the
// kernel's backlog holds them), then serves every one; the inter-broker
// listener is exempt.
func TestMaxConnectionCreationRate(t *testing.T) {
	const n, rate = 20, 2
	addrs := limitsBrokerAddrs(t, map[string]string{"max.connection.creation.rate": fmt.Sprint(rate)})
	served := func(addr string) *atomic.Int32 {
		var got atomic.Int32
		for range n {
			c := admDial(t, addr)
			c.send(kmsg.NewPtrApiVersionsRequest())
			go func() {
				c.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
				if _, err := io.ReadFull(c.c, make([]byte, 4)); err == nil {
					got.Add(1)
				}
			}()
		}
		return &got
	}
	start := time.Now()
	client, inter := served(addrs[1]), served(addrs[0])
	// An observation window, not a wait for a condition: within it the
	// bucket (one second's worth, full at the start) lets at most
	// rate*(1+window) connections in, one more for a refill at the edge.
	const window = 3 * time.Second
	time.Sleep(window - time.Since(start))
	most := int32(rate*(1+window/time.Second) + 1)
	if got := client.Load(); got > most {
		t.Errorf("%d of %d connections served within %v on the client listener; the rate %d/s allows at most %d", got, n, window, rate, most)
	}
	if got := inter.Load(); got <= most {
		t.Errorf("%d of %d connections served within %v on the inter-broker listener, which the rate exempts", got, n, window)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		if c, i := client.Load(), inter.Load(); c < n || i < n {
			return fmt.Errorf("%d of %d served on the client listener, %d on the inter-broker one", c, n, i)
		}
		return nil
	})
}

// connections.max.idle.ms: a connection that sends nothing is closed once
// it has idled that long, and so is a slowloris peer that trickles a
// request a byte at a time: the whole request must arrive within it.
func TestConnectionsMaxIdle(t *testing.T) {
	addr := limitsBroker(t, map[string]string{"connections.max.idle.ms": "1000"})
	idle := admDial(t, addr)
	apiVersions(t, idle)
	slow := admDial(t, addr)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		frame := []byte{0, 0, 0, 100, 0, 18, 0, 3} // a 100-byte ApiVersions, never finished
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := slow.c.Write(frame[i%len(frame) : i%len(frame)+1]); err != nil {
				return
			}
		}
	}()
	for name, c := range map[string]*admConn{"idle": idle, "slowloris": slow} {
		c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s connection: read %v, want it closed by the broker", name, err)
		}
	}
}
