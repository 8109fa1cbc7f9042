package tiered

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/s3test"
)

// A store that misbehaves, answering a listing with keys outside the
// prefix asked for (shorter than the key prefix included), gets none of
// them listed and no panic.
func TestS3ListIgnoresKeysOutsideThePrefix(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>pfx/t/</Prefix><KeyCount>4</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>
<Contents><Key>pfx/t/0/seg</Key><Size>7</Size></Contents>
<Contents><Key>x</Key><Size>1</Size></Contents>
<Contents><Key>pfx/other</Key><Size>1</Size></Contents>
<Contents><Key>pfx/t/1/seg</Key><Size>9</Size></Contents>
</ListBucketResult>`)
	}))
	defer srv.Close()
	s, err := NewS3(S3Config{Bucket: "b", Endpoint: srv.URL, Region: "us-east-1", PathStyle: true, AccessKey: "a", SecretKey: "s", KeyPrefix: "pfx/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := s.List(ctx, "t/")
	if err != nil {
		t.Fatal(err)
	}
	want := []Object{{Key: "t/0/seg", Size: 7}, {Key: "t/1/seg", Size: 9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("List: %v, want %v", got, want)
	}
}

// TestS3HungCallsTimeOut: against a store that hangs every request, each
// call fails within rsm.config.storage.s3.api.call.timeout (1 s here),
// its attempts given up at .api.call.attempt.timeout and retried,
// instead of waiting minutes.
func TestS3HungCallsTimeOut(t *testing.T) {
	t.Parallel()
	st := s3test.Start(t, "tiered")
	fault := st.Faulty(t)
	s := storeOf(t, fault.TieredProps(
		"rsm.config.storage.s3.api.call.attempt.timeout", "200", "rsm.config.storage.s3.api.call.timeout", "1000"))
	fault.Set(s3test.Hang)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	calls := map[string]func() error{
		"put":    func() error { return s.Put(ctx, "k", strings.NewReader("x"), 1) },
		"get":    func() error { _, err := s.GetRange(ctx, "k", 0, 1); return err },
		"list":   func() error { _, err := s.List(ctx, ""); return err },
		"delete": func() error { return s.Delete(ctx, "k") },
	}
	for name, call := range calls {
		refused, start := fault.Refused(), time.Now()
		if err := call(); err == nil {
			t.Errorf("%s on the hung store succeeded", name)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s on the hung store returned after %v", name, took)
		}
		if n := fault.Refused() - refused; n < 2 {
			t.Errorf("%s: %d attempts, want the first timed out and retried", name, n)
		}
	}
}
