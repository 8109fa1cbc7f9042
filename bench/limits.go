package main

import (
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// machineLimits are what this machine moves without any broker: one TCP
// stream over loopback from memory, and one from a page-cached file with
// sendfile(2) (Go's TCPConn.ReadFrom of an *os.File), in MB/s (10^6 B).
type machineLimits struct {
	loopbackMBps float64
	sendfileMBps float64
}

func measureLimits(dir string, fileBytes int64, d time.Duration) (machineLimits, error) {
	var m machineLimits
	var err error
	buf := make([]byte, 1<<20)
	_, _ = rand.Read(buf)
	m.loopbackMBps, err = streamRate(d, func(c *net.TCPConn) error {
		_, err := c.Write(buf)
		return err
	})
	if err != nil {
		return m, err
	}
	path := filepath.Join(dir, "sendfile.bin")
	if err := writeFile(path, fileBytes, buf); err != nil {
		return m, err
	}
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	// One read puts the file in the page cache.
	if _, err := io.Copy(io.Discard, f); err != nil {
		return m, err
	}
	m.sendfileMBps, err = streamRate(d, func(c *net.TCPConn) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := c.ReadFrom(f) // sendfile(2) for a regular file
		return err
	})
	return m, err
}

func writeFile(path string, size int64, chunk []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for n := int64(0); n < size; n += int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), size-n)]); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// streamRate calls send on a loopback connection until d has passed, with a
// reader draining the other end, and returns the bytes received per second.
func streamRate(d time.Duration, send func(*net.TCPConn) error) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	type result struct {
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		var n int64
		for {
			k, err := c.Read(buf)
			n += int64(k)
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				got <- result{n, err}
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	tc := c.(*net.TCPConn)
	start := time.Now()
	for time.Since(start) < d {
		if err := send(tc); err != nil {
			tc.Close()
			return 0, err
		}
	}
	_ = tc.CloseWrite()
	r := <-got
	elapsed := time.Since(start)
	tc.Close()
	if r.err != nil {
		return 0, r.err
	}
	return float64(r.n) / 1e6 / elapsed.Seconds(), nil
}
