package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testLogger shows warnings and errors only, so a failing test shows what
// etcd complained about.
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func startEtcd(t *testing.T) *Embedded {
	t.Helper()
	return startEtcdIn(t, filepath.Join(t.TempDir(), "etcd"))
}

func startEtcdIn(t *testing.T, dir string) *Embedded {
	t.Helper()
	e, err := StartEmbedded(EmbeddedConfig{Dir: dir, Logger: testLogger()})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Embedded.Close: %v", err)
		}
	})
	return e
}

func openStore(t *testing.T, e *Embedded, node int32, mod ...func(*Config)) *Store {
	t.Helper()
	return openStoreAt(t, e.Endpoints(), node, mod...)
}

// openStoreAt opens a store on endpoints (a proxy in front of etcd, say).
func openStoreAt(t *testing.T, endpoints []string, node int32, mod ...func(*Config)) *Store {
	t.Helper()
	cfg := Config{Endpoints: endpoints, NodeID: node, Logger: testLogger()}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Store.Close: %v", err)
		}
	})
	return s
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s *Store, name string, assignment [][]int32, configs map[string]string) [16]byte {
	t.Helper()
	id := NewUUID()
	if err := s.CreateTopic(testCtx(t), name, id, assignment, configs); err != nil {
		t.Fatalf("CreateTopic %s: %v", name, err)
	}
	return id
}

func mustTopic(t *testing.T, s *Store, name string) *Topic {
	t.Helper()
	tp, err := s.Topic(testCtx(t), name)
	if err != nil {
		t.Fatalf("Topic %s: %v", name, err)
	}
	return tp
}

func errorIf(cond bool, format string, args ...any) error {
	if cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}
