package controller

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/samsa-io/samsa/internal/poll"
)

func TestClusterIDStable(t *testing.T) {
	e := startEtcd(t)
	s1 := openStore(t, e, 1)
	s2 := openStore(t, e, 2)
	other := openStore(t, e, 3, func(c *Config) { c.Prefix = "/other" })
	ctx := testCtx(t)
	id1, err := s1.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id2, _ := s2.ClusterID(ctx)
	if id1 != id2 {
		t.Errorf("two brokers see %s and %s", id1, id2)
	}
	if _, err := DecodeUUID(id1); err != nil || len(id1) != 22 || strings.HasPrefix(id1, "-") {
		t.Errorf("cluster id %q: %v", id1, err)
	}
	if id3, _ := other.ClusterID(ctx); id3 == id1 {
		t.Errorf("another prefix has the same cluster id")
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.ClusterID(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("ClusterID after Close: %v", err)
	}
	if err := s1.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	s4 := openStore(t, e, 4)
	if id4, _ := s4.ClusterID(ctx); id4 != id1 {
		t.Errorf("reopened store sees %s, want %s", id4, id1)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{},
		{Endpoints: []string{"x"}, Prefix: "samsa"},
		{Endpoints: []string{"x"}, Prefix: "/samsa/"},
		{Endpoints: []string{"x"}, NodeID: -1},
		{Endpoints: []string{"x"}, SessionTTL: -1},
	}
	for _, c := range bad {
		if _, err := Open(context.Background(), c); err == nil {
			t.Errorf("Open(%+v) accepted", c)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s, err := Open(ctx, Config{Endpoints: []string{"http://127.0.0.1:" + strconv.Itoa(port)}, Logger: testLogger()})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded without etcd")
	}
}

func TestUUID(t *testing.T) {
	seen := map[[16]byte]bool{}
	for i := 0; i < 1000; i++ {
		u := NewUUID()
		if seen[u] || u == ([16]byte{}) {
			t.Fatalf("repeated or zero uuid %x", u)
		}
		seen[u] = true
		s := EncodeUUID(u)
		if len(s) != 22 || s[0] == '-' {
			t.Fatalf("encoded %q", s)
		}
		back, err := DecodeUUID(s)
		if err != nil || back != u {
			t.Fatalf("round trip %q: %x %v", s, back, err)
		}
	}
	for _, s := range []string{"", "short", "AAAAAAAAAAAAAAAAAAAAAAAA", "!!!!!!!!!!!!!!!!!!!!!!"} {
		if _, err := DecodeUUID(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("DecodeUUID(%q): %v", s, err)
		}
	}
}

// Starting and closing etcd and stores, with registrations, watches and a
// campaign, leaves no goroutine behind.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	cycle := func() {
		e, err := StartEmbedded(EmbeddedConfig{Dir: t.TempDir() + "/etcd", Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var stores []*Store
		for id := int32(1); id <= 2; id++ {
			s, err := Open(ctx, Config{Endpoints: e.Endpoints(), NodeID: id, Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, s)
			if err := s.RegisterBroker(ctx, BrokerInfo{ID: id, Host: "h", Port: 1}); err != nil {
				t.Fatal(err)
			}
			s.WatchTopics(ctx, 0, func() {})
			s.WatchBrokers(ctx, 0, func() {})
		}
		if _, err := stores[0].Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, stores[1], "t", [][]int32{{1}}, nil)
		if _, err := stores[1].AllocateProducerIDBlock(ctx, 10); err != nil {
			t.Fatal(err)
		}
		for _, s := range stores {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The first cycle starts the process-wide goroutines of gRPC and etcd
	// that live forever (and are not ours); compare stacks after it, as
	// goleak does: a count would also take in goroutines of the first
	// cycle still ending, and let an exited one hide a leaked one.
	cycle()
	before := goleak.IgnoreCurrent()
	cycle()
	poll.Eventually(t, 10*time.Second, func() error { return goleak.Find(before) })
}

func TestZapBridgeTruncatesLongValues(t *testing.T) {
	var buf strings.Builder
	l := slog.New(slog.NewTextHandler(&buf, nil))
	z := zapToSlog(l, zapcore.WarnLevel)
	z.Info("dropped")
	z.Warn("kept", zap.String("request", strings.Repeat("x", 10000)), zap.Int("n", 3))
	out := buf.String()
	if strings.Contains(out, "dropped") || !strings.Contains(out, "etcd: kept") || !strings.Contains(out, "(10000 bytes)") || len(out) > 1000 {
		t.Errorf("bridge output %q", out)
	}
}

// Close does not hang when etcd is gone: the revoke gives up, the lease
// would expire by itself.
func TestCloseWithEtcdDown(t *testing.T) {
	e, err := StartEmbedded(EmbeddedConfig{Dir: t.TempDir() + "/etcd", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	s, err := Open(ctx, Config{Endpoints: e.Endpoints(), NodeID: 1, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterBroker(ctx, BrokerInfo{ID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	s.WatchTopics(ctx, 0, func() {})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(start); took > revokeTimeout+2*time.Second {
		t.Errorf("Close took %v with etcd down", took)
	}
}
