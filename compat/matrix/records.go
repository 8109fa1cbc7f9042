package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"
)

// The records every client sends (doc.go): the Go side of what the Java,
// Python and Node programs generate and check the same way.

const waitFor = 60 * time.Second

func recKey(i int) []byte { return []byte("key-" + strconv.Itoa(i%37)) }

func recValue(i int) []byte {
	b := make([]byte, 16+i%64)
	for j := range b {
		b[j] = byte(i*31 + j*7)
	}
	return b
}

func recBin(i int) []byte { return []byte{0, 0xff, byte(i)} }

// header is a record header in any Go client's terms.
type header struct {
	key   string
	value []byte
}

func recHeaders(i int) []header {
	return []header{{"i", []byte(strconv.Itoa(i))}, {"bin", recBin(i)}}
}

// checkRecord returns the index of a record read back, after checking its
// key, value and headers byte for byte.
func checkRecord(where string, key, value []byte, hs []header) (int, error) {
	if len(hs) != 2 || hs[0].key != "i" || hs[1].key != "bin" {
		return 0, fmt.Errorf("%s: headers %v, want [i bin]", where, hs)
	}
	i, err := strconv.Atoi(string(hs[0].value))
	if err != nil {
		return 0, fmt.Errorf("%s: header i %q", where, hs[0].value)
	}
	if !bytes.Equal(key, recKey(i)) || !bytes.Equal(value, recValue(i)) || !bytes.Equal(hs[1].value, recBin(i)) {
		return 0, fmt.Errorf("%s: record %d differs from what was sent", where, i)
	}
	return i, nil
}

// readCheck accumulates records read back in scenario 2.
type readCheck struct {
	n    int
	seen map[int]bool
	last map[int32]int
}

func newReadCheck(n int) *readCheck {
	return &readCheck{n: n, seen: map[int]bool{}, last: map[int32]int{}}
}

func (c *readCheck) add(partition int32, offset int64, key, value []byte, hs []header) error {
	i, err := checkRecord(fmt.Sprintf("partition %d offset %d", partition, offset), key, value, hs)
	if err != nil {
		return err
	}
	if prev, ok := c.last[partition]; ok && prev >= i {
		return fmt.Errorf("partition %d: record %d after %d", partition, i, prev)
	}
	c.last[partition] = i
	if c.seen[i] {
		return fmt.Errorf("record %d read twice", i)
	}
	c.seen[i] = true
	return nil
}

func (c *readCheck) done() bool { return len(c.seen) == c.n }

func (c *readCheck) err() error {
	return fmt.Errorf("read %d of %d records in %v", len(c.seen), c.n, waitFor)
}

// eventually polls cond until it returns nil, for up to waitFor.
func eventually(ctx context.Context, what string, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// goScenarios maps scenario names to a Go client's implementations.
type goScenarios map[string]func(ctx context.Context, e *env) error

// goJob runs a Go client's scenarios in this process, one after another.
func goJob(name string, impl func() goScenarios) job {
	sc := impl()
	var have []string
	for _, s := range scenarios {
		if sc[s] != nil {
			have = append(have, s)
		}
	}
	r := row{name, have}
	return job{rows: []row{r}, run: func(ctx context.Context, e *env) []Result {
		var out []Result
		for _, s := range have {
			start := time.Now()
			sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			err := protect(func() error { return sc[s](sctx, e) })
			cancel()
			res := Result{Client: name, Scenario: s, OK: err == nil, Ms: time.Since(start).Milliseconds()}
			if err != nil {
				res.Error = err.Error()
			}
			out = append(out, res)
		}
		return out
	}}
}

func protect(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// incompressible returns n random bytes: a record too large for
// max.message.bytes stays too large whatever codec the client applies.
func incompressible(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}
