// Package s3test runs a real S3-compatible object store for tests:
// versitygw (an Apache-2 S3 gateway), built into .tools by the Makefile's
// versitygw target (make test-deps runs it), serving a temporary directory
// through its posix backend on a free loopback port. It is a process of
// its own, never a stub inside samsa; the test's cleanup stops it.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/samsa-io/samsa/internal/poll"
)

// Credentials and region of every store this package starts.
const (
	AccessKey = "samsa-test-access"
	SecretKey = "samsa-test-secret-key"
	Region    = "us-east-1"
)

// Store is a running versitygw with one bucket.
type Store struct {
	Endpoint string // http://127.0.0.1:PORT
	Bucket   string
	Dir      string // the posix backend's root: one directory per bucket
}

// Binary returns the path of the versitygw binary under the repository's
// .tools, or an error naming the make target that builds it.
func Binary() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("s3test: no caller information")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bins, _ := filepath.Glob(filepath.Join(root, ".tools", "versitygw-*", "versitygw"))
	if len(bins) == 0 {
		return "", fmt.Errorf("s3test: no versitygw under %s/.tools: run make versitygw (make test-deps does)", root)
	}
	return bins[len(bins)-1], nil
}

// Start runs versitygw on a free 127.0.0.1 port over a fresh temporary
// directory, waits until it answers, and creates a bucket named bucket.
// The test fails if any of that fails.
func Start(tb testing.TB, bucket string) *Store {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var out bytes.Buffer
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--port", addr, "--quiet", "posix", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("s3test: start versitygw: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	s := &Store{Endpoint: "http://" + addr, Bucket: bucket, Dir: dir}
	client := s.Client()
	// The gateway serves once CreateBucket goes through.
	poll.Eventually(tb, 60*time.Second, func() error {
		select {
		case err := <-exited:
			exited <- err
			tb.Fatalf("s3test: versitygw exited: %v\n%s", err, out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		return err
	})
	return s
}

// Client returns an S3 client of the store (path-style, its credentials).
func (s *Store) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Timeout: 10 * time.Second},
	})
}
