package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The floor server writes what a floor produce sends into a new file, and a
// floor consume reads that many bytes of the directory's files back.
func TestFloorProduceAndConsume(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- floorServe(ln, dir) }()
	defer func() { ln.Close(); <-served }()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 3<<20 + 12345
	r, err := floorLoad(ctx, "produce", addr, n)
	if err != nil || r.Bytes != n {
		t.Fatalf("produce: %+v, %v", r, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "floor-*.data"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if st, err := os.Stat(files[0]); err != nil || st.Size() != n {
		t.Fatalf("%s: %v, %v; want %d bytes", files[0], st, err, n)
	}
	// The file holds three whole pieces: ten pieces' worth cycles over them.
	r, err = floorLoad(ctx, "consume", addr, 10<<20)
	if err != nil || r.Bytes != 10<<20 {
		t.Fatalf("consume: %+v, %v", r, err)
	}
}
