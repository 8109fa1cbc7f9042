package testutil

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoServer echoes every connection until the test ends; it returns the
// address and a channel that gets each connection's end (EOF or error).
func echoServer(t *testing.T) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := io.Copy(c, c)
				ended <- err
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), ended
}

// roundTrip writes msg and reads it back within d.
// dialT connects to addr; the connection closes when the test ends.
func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func roundTrip(c net.Conn, msg string, d time.Duration) error {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("echoed " + string(buf))
	}
	return nil
}

func TestLinkDialModes(t *testing.T) {
	addr, ended := echoServer(t)
	l := NewLink()
	t.Cleanup(l.Close)
	ctx := context.Background()

	c, err := l.Dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, "pass", 10*time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}

	// Blackholed: nothing comes back, yet the connection stays open; a
	// new dial hangs until its context ends.
	l.Set(Blackhole)
	if err := roundTrip(c, "held", 200*time.Millisecond); !os.IsTimeout(err) {
		t.Fatalf("blackhole: round trip gave %v, want a timeout", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = l.Dial(dctx, "tcp", addr)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blackhole: dial gave %v, want a deadline", err)
	}
	// Healed, the held bytes arrive, as TCP retransmits them.
	l.Set(Pass)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("after heal: read %q, %v; want the held bytes", buf, err)
	}

	// Reset: the open connection ends, new ones are refused.
	l.Set(Reset)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("reset: read succeeded")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("reset: the server side stayed open")
	}
	if _, err := l.Dial(ctx, "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("reset: dial gave %v, want connection refused", err)
	}
	l.Set(Pass)
	c2, err := l.Dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, "again", 10*time.Second); err != nil {
		t.Fatalf("pass again: %v", err)
	}
}

// A close is held while blackholed, like any other packet.
func TestLinkBlackholeHoldsClose(t *testing.T) {
	addr, ended := echoServer(t)
	l := NewLink()
	t.Cleanup(l.Close)
	c, err := l.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(c, "x", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	l.Set(Blackhole)
	c.Close()
	select {
	case err := <-ended:
		t.Fatalf("the server saw the close through a blackhole: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	l.Set(Pass)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the close never reached the server after the heal")
	}
}

func TestProxyModesAndUpstreamMove(t *testing.T) {
	addr1, ended1 := echoServer(t)
	addr2, _ := echoServer(t)
	var mu sync.Mutex
	up := addr1
	p := StartProxy(t, func() string { mu.Lock(); defer mu.Unlock(); return up })

	c := dialT(t, p.Addr())
	if err := roundTrip(c, "one", 10*time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}

	// A connection accepted while blackholed reaches the upstream only
	// once healed.
	p.Set(Blackhole)
	c2 := dialT(t, p.Addr())
	if err := roundTrip(c2, "two", 200*time.Millisecond); !os.IsTimeout(err) {
		t.Fatalf("blackhole: round trip gave %v, want a timeout", err)
	}
	p.Set(Pass)
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c2, buf); err != nil || string(buf) != "two" {
		t.Fatalf("after heal: read %q, %v", buf, err)
	}

	// The upstream restarts elsewhere: DropUpstream ends the connections
	// from the server's side and new ones go to the new address.
	mu.Lock()
	up = addr2
	mu.Unlock()
	p.DropUpstream()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("read after DropUpstream succeeded")
	}
	for range 2 {
		select {
		case <-ended1:
		case <-time.After(10 * time.Second):
			t.Fatal("the old upstream's connections stayed open")
		}
	}
	c3 := dialT(t, p.Addr())
	if err := roundTrip(c3, "three", 10*time.Second); err != nil {
		t.Fatalf("new upstream: %v", err)
	}

	// Reset: accepted connections are closed at once.
	p.Set(Reset)
	c4 := dialT(t, p.Addr())
	c4.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c4.Read(buf); err == nil || os.IsTimeout(err) {
		t.Fatalf("reset: read gave %v, want the connection closed", err)
	}
}
