package broker

import (
	"log/slog"
	"net"
	"syscall"
	"testing"

	"github.com/samsa-io/samsa/internal/config"
)

// sockopt reads an int socket option of c.
func sockopt(t *testing.T, c *net.TCPConn, opt int) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

// socket.send.buffer.bytes and socket.receive.buffer.bytes set SO_SNDBUF
// and SO_RCVBUF of an accepted connection (Linux reports twice the value
// set); -1, samsa's default, leaves the system's default.
func TestTuneConnSocketBuffers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accept := func() *net.TCPConn {
		t.Helper()
		d, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.TCPConn)
	}
	tune := func(props map[string]string) *net.TCPConn {
		t.Helper()
		p, err := config.New(props)
		if err != nil {
			t.Fatal(err)
		}
		b := &Broker{settings: p.Settings(), log: slog.New(slog.DiscardHandler)}
		c := accept()
		b.tuneConn(c)
		return c
	}
	defSnd, defRcv := sockopt(t, accept(), syscall.SO_SNDBUF), sockopt(t, accept(), syscall.SO_RCVBUF)

	c := tune(map[string]string{"socket.send.buffer.bytes": "65536", "socket.receive.buffer.bytes": "49152"})
	if got := sockopt(t, c, syscall.SO_SNDBUF); got != 2*65536 && got != 65536 {
		t.Errorf("SO_SNDBUF %d, want 65536 (doubled by Linux)", got)
	}
	if got := sockopt(t, c, syscall.SO_RCVBUF); got != 2*49152 && got != 49152 {
		t.Errorf("SO_RCVBUF %d, want 49152 (doubled by Linux)", got)
	}
	// -1, which is also samsa's default (Kafka's is 102400): the kernel's
	// autotuned buffers.
	for _, props := range []map[string]string{{"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1"}, {}} {
		c = tune(props)
		if got := sockopt(t, c, syscall.SO_SNDBUF); got != defSnd {
			t.Errorf("%v: SO_SNDBUF %d, want the default %d", props, got, defSnd)
		}
		if got := sockopt(t, c, syscall.SO_RCVBUF); got != defRcv {
			t.Errorf("%v: SO_RCVBUF %d, want the default %d", props, got, defRcv)
		}
	}
}
