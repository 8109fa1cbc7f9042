package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// healthcheck asks a broker for its API versions, as a container health
// check (the image has no shell to run a client with): exit status 0 when
// the broker answers without error, 1 otherwise.
func healthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("bootstrap-server", "127.0.0.1:9092", "the broker's host:port")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	n, err := apiVersions(*addr, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "samsa: healthcheck %s: %v\n", *addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s serves %d APIs\n", *addr, n)
	return 0
}

// apiVersions sends one ApiVersions v3 request and returns how many API
// keys the broker advertises.
func apiVersions(addr string, timeout time.Duration) (int, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-healthcheck", version
	const corr = 1
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("samsa-healthcheck"))
	if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		return 0, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return 0, fmt.Errorf("response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return 0, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	// ApiVersions answers with a v0 response header: no tagged fields.
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := resp.ReadFrom(body[4:]); err != nil {
		return 0, fmt.Errorf("decoding the response: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, err
	}
	return len(resp.ApiKeys), nil
}
