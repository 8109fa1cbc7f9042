package controller

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestTwoEmbeddedAtOnce(t *testing.T) {
	a := startEtcd(t)
	b := startEtcd(t)
	if a.Endpoints()[0] == b.Endpoints()[0] {
		t.Fatalf("both on %v", a.Endpoints())
	}
	ctx := testCtx(t)
	for i, e := range []*Embedded{a, b} {
		cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if _, err := cli.Put(ctx, "k", string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	// Each has its own data.
	for i, e := range []*Embedded{a, b} {
		cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		r, err := cli.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != string(rune('a'+i)) {
			t.Errorf("etcd %d: k = %v", i, r.Kvs)
		}
	}
}

func TestEmbeddedListensOnLoopbackOnly(t *testing.T) {
	e := startEtcd(t)
	for _, u := range e.Endpoints() {
		if want := "http://127.0.0.1:"; len(u) <= len(want) || u[:len(want)] != want {
			t.Errorf("endpoint %s not on 127.0.0.1", u)
		}
	}
	for _, u := range e.etcd.Config().ListenPeerUrls {
		if u.Hostname() != "127.0.0.1" {
			t.Errorf("peer URL %s not on 127.0.0.1", u.String())
		}
	}
}

func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	e, err := StartEmbedded(EmbeddedConfig{Dir: dir, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	s, err := Open(ctx, Config{Endpoints: e.Endpoints(), NodeID: 1, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cid, _ := s.ClusterID(ctx)
	id := NewUUID()
	if err := s.CreateTopic(ctx, "t", id, [][]int32{{1}}, map[string]string{"retention.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := startEtcdIn(t, dir)
	s2 := openStore(t, e2, 1)
	cid2, _ := s2.ClusterID(ctx)
	if cid2 != cid {
		t.Errorf("cluster id %s after restart, was %s", cid2, cid)
	}
	tp := mustTopic(t, s2, "t")
	if tp.ID != id || tp.Configs["retention.ms"] != "5" {
		t.Errorf("topic after restart: %+v", tp)
	}
}

func TestEmbeddedFixedPorts(t *testing.T) {
	cp, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	pp := cp
	for pp == cp {
		if pp, err = freeLoopbackPort(); err != nil {
			t.Fatal(err)
		}
	}
	e, err := StartEmbedded(EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"), ClientPort: cp, PeerPort: pp, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, want := e.Endpoints()[0], "http://127.0.0.1:"+strconv.Itoa(cp); got != want {
		t.Errorf("endpoint %s, want %s", got, want)
	}
	// A second server on the same ports fails cleanly.
	_, err = StartEmbedded(EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd2"), ClientPort: cp, PeerPort: pp, Logger: testLogger()})
	if err == nil {
		t.Fatal("second etcd on the same ports started")
	}
}

func TestStartEmbeddedNeedsDir(t *testing.T) {
	if _, err := StartEmbedded(EmbeddedConfig{}); err == nil {
		t.Fatal("no error without Dir")
	}
}
