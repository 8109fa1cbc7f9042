package protocol

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rgTLSPair returns both ends of a TLS connection over loopback TCP.
func rgTLSPair(t *testing.T) (server, client *tls.Conn) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	cli, srv := cwTCPPair(t)
	server = tls.Server(srv, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	client = tls.Client(cli, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	return server, client
}

// rgReadFrame reads one size-prefixed frame from r in a goroutine.
func rgReadFrame(r io.Reader) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			ch <- nil
			return
		}
		frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
		copy(frame, size[:])
		if _, err := io.ReadFull(r, frame[4:]); err != nil {
			ch <- nil
			return
		}
		ch <- frame
	}()
	return ch
}

// TestFetchResponseRegionKinds writes a Fetch response whose partitions
// take their records from file ranges, bytes regions, both mixed, and
// RecordBatches, through every path a connection can take: TCP with
// sendfile, TCP without, and TLS (no sendfile possible). Each time the
// peer must get exactly kmsg's encoding, the file ranges must go by the
// expected path, and bytes regions must count as neither.
func TestFetchResponseRegionKinds(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(30, 4))
	data := frRandBytes(rng, 1<<20)
	f := cwTempFile(t, data)
	file := func(off, n int) Region { return Region{File: f, Offset: int64(off), Length: int64(n)} }
	mem := func(b []byte, off, n int) Region { return Region{Bytes: b, Offset: int64(off), Length: int64(n)} }
	chunk := frRandBytes(rng, 200<<10) // a remote segment's cached chunk

	// Partition records, as region lists; nil: RecordBatches.
	parts := [][]Region{
		{file(100, 70000)},                   // local segment only
		{mem(chunk, 3000, 90000)},            // remote chunk only
		{mem(chunk, 0, 100), file(500, 300)}, // short bytes (copied into the frame), then a file
		{file(9, 4096), mem(chunk, 7, 65536), file(200000, 1), mem(chunk, 100000, 511)},
		{},  // empty
		nil, // memory records
	}
	var fileBytes int64
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = 7
	poisoned := kmsg.NewPtrFetchResponse()
	poisoned.SessionID = 7
	var regions [][][]Region
	for ti := range 2 {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "topic-" + string(rune('a'+ti))
		pt := rt
		regions = append(regions, nil)
		for pi, rs := range parts {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(pi)
			rp.HighWatermark = int64(1000 * pi)
			var recs []byte
			for _, r := range rs {
				if r.File != nil {
					recs = append(recs, data[r.Offset:r.Offset+r.Length]...)
					fileBytes += r.Length
				} else {
					recs = append(recs, r.Bytes[r.Offset:r.Offset+r.Length]...)
				}
			}
			if rs == nil {
				recs = frRandBytes(rng, 2000)
			} else if recs == nil {
				recs = []byte{}
			}
			rp.RecordBatches = recs
			rt.Partitions = append(rt.Partitions, rp)
			if rs != nil {
				rp.RecordBatches = []byte("must not be sent")
			}
			pt.Partitions = append(pt.Partitions, rp)
			regions[ti] = append(regions[ti], rs)
		}
		resp.Topics = append(resp.Topics, rt)
		poisoned.Topics = append(poisoned.Topics, pt)
	}

	for _, version := range []int16{4, 11, 12, 16} {
		h := Header{Key: int16(kmsg.Fetch), Version: version, CorrelationID: 99, Flexible: version >= 12}
		resp.SetVersion(version)
		want := AppendResponse(nil, h, resp)
		for _, path := range []string{"tcp+sendfile", "tcp", "tls"} {
			var w net.Conn
			var r io.Reader
			switch path {
			case "tls":
				w, r = rgTLSPair(t)
			default:
				w, r = cwTCPPair(t)
			}
			got := rgReadFrame(r)
			released := 0
			fr, err := NewFetchResponse(h, poisoned, regions, func() { released++ })
			if err != nil {
				t.Fatalf("v%d %s: %v", version, path, err)
			}
			var st Stats
			n, err := fr.WriteTo(w, path != "tcp", &st)
			if err != nil {
				t.Fatalf("v%d %s: WriteTo: %v", version, path, err)
			}
			if b := cwRecv(t, got); !bytes.Equal(b, want) {
				t.Fatalf("v%d %s: peer got %d bytes, want %d\n%s", version, path, len(b), len(want), frFirstDiff(b, want))
			}
			if n != int64(len(want)) || released != 1 {
				t.Fatalf("v%d %s: wrote %d of %d bytes, released %d times", version, path, n, len(want), released)
			}
			sf, cp := st.SendfileBytes.Load(), st.CopiedFileBytes.Load()
			if path == "tcp+sendfile" && (sf != fileBytes || cp != 0) {
				t.Fatalf("v%d %s: SendfileBytes %d CopiedFileBytes %d, want %d and 0", version, path, sf, cp, fileBytes)
			}
			if path != "tcp+sendfile" && (sf != 0 || cp != fileBytes) {
				t.Fatalf("v%d %s: SendfileBytes %d CopiedFileBytes %d, want 0 and %d", version, path, sf, cp, fileBytes)
			}
		}
	}
}

// TestChunksBadBytesRegion: a bytes region must lie inside its Bytes.
func TestChunksBadBytesRegion(t *testing.T) {
	b := make([]byte, 10)
	for _, r := range []Region{
		{Bytes: b, Offset: 5, Length: 6},
		{Bytes: b, Offset: 11},
		{Bytes: b, Offset: -1, Length: 1},
		{Length: 1},
	} {
		var c Chunks
		c.Region(r)
		if _, err := c.WriteTo(io.Discard, false, nil); !errors.Is(err, ErrBadRegion) {
			t.Fatalf("region offset %d length %d of %d bytes: WriteTo error %v, want ErrBadRegion", r.Offset, r.Length, len(r.Bytes), err)
		}
	}
	var c Chunks
	c.Region(Region{Bytes: b, Offset: 10}) // empty, at the end: fine
	c.Region(Region{})                     // empty, no bytes: fine
	if c.Err() != nil || c.Len() != 0 {
		t.Fatalf("empty bytes regions: err %v, len %d", c.Err(), c.Len())
	}
}
