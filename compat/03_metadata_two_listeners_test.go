package compat

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// A broker with two listeners, as docker-compose files set up (one for
// the containers' network, one for the host), answers Metadata with the
// advertised address of the listener each client came in on, and clients
// of both produce and consume through their own.
func TestTwoListenersAdvertiseTheirOwnAddress(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,HOST://127.0.0.1:0",
		"advertised.listeners":           "PLAINTEXT://127.0.0.1:0,HOST://localhost:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"auto.create.topics.enable":      "true",
	})
	addrs := n.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("broker bound %d listeners, want 2", len(addrs))
	}
	for i, want := range []string{"127.0.0.1", "localhost"} {
		_, port, _ := net.SplitHostPort(addrs[i])
		cl := newKgo(t, addrs[i])
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			t.Fatalf("listener %d: Metadata: %v", i, err)
		}
		if len(resp.Brokers) != 1 {
			t.Fatalf("listener %d: %d brokers", i, len(resp.Brokers))
		}
		b := resp.Brokers[0]
		if b.Host != want || strconv.Itoa(int(b.Port)) != port {
			t.Errorf("listener %d (%s): Metadata advertises %s:%d, want %s:%s", i, addrs[i], b.Host, b.Port, want, port)
		}
		topic := "via-" + want
		pcl := newKgo(t, addrs[i], kgo.AllowAutoTopicCreation())
		produceAll(t, pcl, &kgo.Record{Topic: topic, Value: []byte(want)})
		got := consumeExact(t, addrs[i], topic, map[int32]int64{0: 0}, 1, 20*time.Second)
		if string(got[0].Value) != want {
			t.Errorf("listener %d: consumed %q", i, got[0].Value)
		}
	}
}
