package main

// The kernel's floor for a broker's bytes: samsa-bench floor serve is a
// server that does only what any broker must do per byte, with none of a
// broker's work around it, so that make bench can show how close a broker's
// CPU-s/GB comes to what the kernel itself costs on this machine.
//
//   - produce: read from the socket into a 1 MiB buffer, CRC-32C it (a v2
//     batch's checksum, which a broker verifies), and pwrite it to a file;
//   - consume: sendfile 1 MiB pieces of files in turn (the partitions of a
//     Fetch) to the socket.
//
// The client (samsa-bench floor produce|consume) sends one 9-byte request, a
// mode byte and a big-endian byte count, then writes or reads that many
// bytes; after a produce the server answers one byte once it has written
// everything. Socket buffers are the kernel's autotuned ones.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

const floorPiece = 1 << 20

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	floorSum   uint32 // the produce side's checksums, kept so that none is optimized away
)

func runFloor(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "serve" && args[0] != "produce" && args[0] != "consume") {
		fmt.Fprintln(stderr, "usage: samsa-bench floor serve -dir D | floor produce|consume -brokers HOST:PORT -bytes N")
		return 2
	}
	op := args[0]
	fs := flag.NewFlagSet("samsa-bench floor "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "serve: the address to listen on (printed on stdout)")
	dir := fs.String("dir", "", "serve: each produce writes a new floor-*.data here; consume sends every file here of 1 MiB or more in turn")
	addr := fs.String("brokers", "", "produce, consume: the floor server's address")
	n := fs.Int64("bytes", 0, "produce, consume: bytes to move")
	asJSON := fs.Bool("json", false, "produce, consume: print the result as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if op == "serve" {
		if *dir == "" {
			fmt.Fprintln(stderr, "samsa-bench floor serve: need -dir")
			return 2
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(stderr, "samsa-bench floor serve: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
		if err := floorServe(ln, *dir); err != nil {
			fmt.Fprintf(stderr, "samsa-bench floor serve: %v\n", err)
			return 1
		}
		return 0
	}
	if *addr == "" || *n < 1 {
		fmt.Fprintln(stderr, "samsa-bench floor: need -brokers and -bytes >= 1")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := floorLoad(ctx, op, *addr, *n)
	if err != nil {
		fmt.Fprintf(stderr, "samsa-bench floor %s: %v\n", op, err)
		return 1
	}
	if *asJSON {
		_ = json.NewEncoder(stdout).Encode(res)
	} else {
		fmt.Fprintf(stdout, "floor %s: %d bytes in %.2fs: %.1f MB/s\n", op, res.Bytes, res.Seconds, res.MBps)
	}
	return 0
}

// floorServe serves floor connections on ln until it is closed.
func floorServe(ln net.Listener, dir string) error {
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			if err := floorConn(c.(*net.TCPConn), dir); err != nil {
				fmt.Fprintf(os.Stderr, "floor: %v\n", err)
			}
		}()
	}
}

func floorConn(c *net.TCPConn, dir string) error {
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint64(hdr[1:]))
	switch hdr[0] {
	case 'p':
		// A new file each time, as a broker appends to new segments:
		// truncating the last one would free its pages on this clock.
		f, err := os.CreateTemp(dir, "floor-*.data")
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, floorPiece)
		var off int64
		for off < n {
			m, err := io.ReadFull(c, buf[:min(n-off, floorPiece)])
			if err != nil {
				return err
			}
			floorSum = crc32.Update(floorSum, castagnoli, buf[:m])
			if _, err := f.WriteAt(buf[:m], off); err != nil {
				return err
			}
			off += int64(m)
		}
		_, err = c.Write([]byte{1})
		return err
	case 'c':
		var files []*os.File
		var sizes []int64
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			st, err := d.Info()
			if err != nil || st.Size() < floorPiece {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			files, sizes = append(files, f), append(sizes, st.Size()/floorPiece*floorPiece)
			return nil
		})
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		if err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no file of at least %d bytes in %s", floorPiece, dir)
		}
		offs := make([]int64, len(files))
		for sent, i := int64(0), 0; sent < n; i = (i + 1) % len(files) {
			want := min(n-sent, floorPiece)
			if offs[i]+want > sizes[i] {
				offs[i] = 0
			}
			if _, err := files[i].Seek(offs[i], io.SeekStart); err != nil {
				return err
			}
			// TCPConn.ReadFrom of an *os.File behind a LimitedReader is
			// sendfile(2).
			m, err := c.ReadFrom(&io.LimitedReader{R: files[i], N: want})
			if err != nil {
				return err
			}
			if m != want {
				return fmt.Errorf("sent %d of %d bytes of %s", m, want, files[i].Name())
			}
			sent, offs[i] = sent+m, offs[i]+m
		}
		return nil
	}
	return fmt.Errorf("mode %q", hdr[0])
}

func floorLoad(ctx context.Context, op, addr string, n int64) (Result, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var hdr [9]byte
	hdr[0] = op[0]
	binary.BigEndian.PutUint64(hdr[1:], uint64(n))
	start := time.Now()
	if _, err := c.Write(hdr[:]); err != nil {
		return Result{}, err
	}
	if op == "produce" {
		buf := make([]byte, floorPiece)
		for i := range buf {
			buf[i] = byte(i)
		}
		for left := n; left > 0; {
			m, err := c.Write(buf[:min(left, floorPiece)])
			if err != nil {
				return Result{}, err
			}
			left -= int64(m)
		}
		var ack [1]byte
		if _, err := io.ReadFull(c, ack[:]); err != nil {
			return Result{}, fmt.Errorf("waiting for the server's answer: %w", err)
		}
	} else {
		m, err := io.Copy(io.Discard, bufio.NewReaderSize(c, floorPiece))
		if err == nil && m != n {
			err = fmt.Errorf("read %d of %d bytes", m, n)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return Result{}, err
		}
	}
	return summary(op, 0, n, time.Since(start)), nil
}
