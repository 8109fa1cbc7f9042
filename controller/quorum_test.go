package controller

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/poll"
)

// quorumOf starts (in parallel, as three processes would) the members of a
// three-member cluster on loopback, each served on one port of its own,
// with data in dirs.
func quorumOf(t *testing.T, members []Member, dirs []string, which ...int) []*Embedded {
	t.Helper()
	out := make([]*Embedded, len(members))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for _, i := range which {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = StartEmbedded(EmbeddedConfig{
				Dir: dirs[i], Members: members, Name: members[i].Name, Listen: members[i].Addr,
				Logger: testLogger(), StartTimeout: 60 * time.Second,
			})
		}()
	}
	wg.Wait()
	for _, i := range which {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i, errs[i])
		}
	}
	return out
}

func loopbackMembers(t *testing.T, n int) ([]Member, []string) {
	t.Helper()
	var ms []Member
	var dirs []string
	base := t.TempDir()
	for i := range n {
		p, err := freeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, Member{Name: MemberName(int32(i + 1)), Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
		dirs = append(dirs, filepath.Join(base, MemberName(int32(i+1)), "etcd"))
	}
	return ms, dirs
}

func memberAddrs(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, "http://"+m.Addr)
	}
	return out
}

// Three members form one cluster through their single ports: clients reach
// any of them there, the cluster keeps serving with one member gone, and a
// member restarted on its data rejoins with everything written meanwhile.
func TestQuorumThreeMembers(t *testing.T) {
	ms, dirs := loopbackMembers(t, 3)
	es := quorumOf(t, ms, dirs, 0, 1, 2)
	defer func() {
		for _, e := range es {
			if e != nil {
				e.Close()
			}
		}
	}()
	ctx := testCtx(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: memberAddrs(ms), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != 3 {
		t.Fatalf("%d members: %v", len(ml.Members), ml.Members)
	}
	for _, m := range ml.Members {
		if len(m.PeerURLs) != 1 || len(m.ClientURLs) != 1 || m.PeerURLs[0] != m.ClientURLs[0] {
			t.Errorf("member %s: peer %v client %v, want one shared URL", m.Name, m.PeerURLs, m.ClientURLs)
		}
	}
	// Each member, through its own port, sees the one cluster's data.
	if _, err := cli.Put(ctx, "k", "1"); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + m.Addr}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Get(ctx, "k")
		c.Close()
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "1" {
			t.Errorf("via %s: %v %v", m.Name, r, err)
		}
	}

	// Member 3 goes: two of three still serve writes.
	if err := es[2].Close(); err != nil {
		t.Errorf("close member 3: %v", err)
	}
	es[2] = nil
	poll.Eventually(t, 30*time.Second, func() error {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := cli.Put(c, "k", "2")
		return err
	})
	// It comes back on its data and catches up.
	es[2] = quorumOf(t, ms, dirs, 2)[2]
	c3, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + ms[2].Addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	r, err := c3.Get(ctx, "k")
	if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "2" {
		t.Fatalf("member 3 after restart: %v %v", r, err)
	}
}

// A member alone cannot serve: it waits for a majority, then fails with an
// error that says so.
func TestQuorumMemberWaitsForMajority(t *testing.T) {
	ms, dirs := loopbackMembers(t, 3)
	_, err := StartEmbedded(EmbeddedConfig{Dir: dirs[0], Members: ms, Name: ms[0].Name, Listen: ms[0].Addr,
		Logger: testLogger(), StartTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "fewer than 2 of the voters") {
		t.Fatalf("err = %v", err)
	}
	// The port is free again.
	l, err := net.Listen("tcp", ms[0].Addr)
	if err != nil {
		t.Fatalf("port still held: %v", err)
	}
	l.Close()
}

func TestQuorumBadConfig(t *testing.T) {
	ms, dirs := loopbackMembers(t, 2)
	for _, cfg := range []EmbeddedConfig{
		{Dir: dirs[0], Members: ms, Name: "node-9", Listen: ms[0].Addr},
		{Dir: dirs[0], Members: ms, Name: ms[0].Name},
		{Dir: dirs[0], Members: []Member{{Name: "a=b", Addr: ms[0].Addr}}, Name: "a=b", Listen: ms[0].Addr},
		{Dir: dirs[0], Members: []Member{{Name: "a", Addr: "nohost"}}, Name: "a", Listen: ms[0].Addr},
	} {
		if _, err := StartEmbedded(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
