package s3test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestStartServesABucket starts versitygw and puts, lists and gets an
// object through a real S3 client; the object lands in the backend's
// directory.
func TestStartServesABucket(t *testing.T) {
	st := Start(t, "samsa-test")
	c := st.Client()
	ctx := context.Background()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String("a/b.log"),
		Body: strings.NewReader("hello tiered")}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket), Prefix: aws.String("a/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 1 || aws.ToString(list.Contents[0].Key) != "a/b.log" {
		t.Fatalf("listed %+v, want a/b.log", list.Contents)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String("a/b.log"), Range: aws.String("bytes=6-11")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(b) != "tiered" {
		t.Fatalf("ranged get = %q, want %q", b, "tiered")
	}
	if data, err := os.ReadFile(filepath.Join(st.Dir, st.Bucket, "a", "b.log")); err != nil || string(data) != "hello tiered" {
		t.Fatalf("backend file = %q, %v", data, err)
	}
}
