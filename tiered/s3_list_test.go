package tiered

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
