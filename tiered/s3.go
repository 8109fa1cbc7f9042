package tiered

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/samsa-io/samsa/internal/config"
)

// S3Config is an S3 bucket and how to reach it.
type S3Config struct {
	Bucket    string
	Endpoint  string // "" for AWS's endpoint of Region
	Region    string
	PathStyle bool   // the bucket in the URL's path (S3-compatible stores)
	AccessKey string // "" with SecretKey "": the SDK's anonymous access
	SecretKey string
	KeyPrefix string // rsm.config.key.prefix: prepended to every key

	// CallTimeout is rsm.config.storage.s3.api.call.timeout: how long
	// one call may take, its retries included. Default 2 minutes.
	CallTimeout time.Duration
	// AttemptTimeout is rsm.config.storage.s3.api.call.attempt.timeout:
	// how long one HTTP request of a call may take before it is given up
	// and retried. Default 30 seconds.
	AttemptTimeout time.Duration
}

// Defaults of S3Config's timeouts. A Put is given putAllowance more of
// each per MiB it sends, so that a large segment on a slow link is not
// cut off for its size: the timeouts bound the wait for a store that
// does not answer, not the transfer.
const (
	defaultCallTimeout    = 2 * time.Minute
	defaultAttemptTimeout = 30 * time.Second
	putAllowance          = time.Second
)

// S3ConfigFrom reads the bucket from the broker's properties, by the
// names of Aiven's plugin and its S3 backend (rsm.config.storage.s3.*,
// rsm.config.storage.aws.*, rsm.config.key.prefix).
func S3ConfigFrom(p *config.Props) S3Config {
	return S3Config{
		Bucket:         p.RSM("rsm.config.storage.s3.bucket.name"),
		Endpoint:       p.RSM("rsm.config.storage.s3.endpoint.url"),
		Region:         p.RSM("rsm.config.storage.s3.region"),
		PathStyle:      p.RSM("rsm.config.storage.s3.path.style.access.enabled") == "true",
		AccessKey:      p.RSM("rsm.config.storage.aws.access.key.id"),
		SecretKey:      p.RSM("rsm.config.storage.aws.secret.access.key"),
		KeyPrefix:      p.RSM("rsm.config.key.prefix"),
		CallTimeout:    rsmMillis(p, "rsm.config.storage.s3.api.call.timeout"),
		AttemptTimeout: rsmMillis(p, "rsm.config.storage.s3.api.call.attempt.timeout"),
	}
}

// rsmMillis is a plugin property in milliseconds, 0 when unset.
func rsmMillis(p *config.Props, key string) time.Duration {
	ms, _ := strconv.ParseInt(p.RSM(key), 10, 64)
	return time.Duration(ms) * time.Millisecond
}

// S3 is an ObjectStore over one S3 bucket (AWS's SDK, which retries
// throttling, server errors and timed-out attempts with backoff). Every
// call is bounded by S3Config's timeouts: a store that hangs holds up a
// caller for CallTimeout at most.
type S3 struct {
	client  *s3.Client
	bucket  string
	prefix  string
	tr      http.RoundTripper // shared by every call's client
	call    time.Duration
	attempt time.Duration
}

var _ ObjectStore = (*S3)(nil)

// NewS3 returns the store of cfg's bucket; it makes no request.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("tiered: no S3 bucket")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = defaultCallTimeout
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = defaultAttemptTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	opts := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: cfg.PathStyle,
		HTTPClient:   &http.Client{Transport: tr, Timeout: cfg.AttemptTimeout},
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		opts.Credentials = credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")
	}
	return &S3{client: s3.New(opts), bucket: cfg.Bucket, prefix: cfg.KeyPrefix, tr: tr,
		call: cfg.CallTimeout, attempt: cfg.AttemptTimeout}, nil
}

// bounded is ctx bounded by the call timeout, extended by extra.
func (s *S3) bounded(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.call+extra)
}

func (s *S3) key(k string) *string { return aws.String(s.prefix + k) }

// Put implements ObjectStore.
func (s *S3) Put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	extra := time.Duration(size>>20) * putAllowance
	ctx, cancel := s.bounded(ctx, extra)
	defer cancel()
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key),
		Body: body, ContentLength: aws.Int64(size)}, func(o *s3.Options) {
		o.HTTPClient = &http.Client{Transport: s.tr, Timeout: s.attempt + extra}
	})
	if err != nil {
		return fmt.Errorf("tiered: put %s: %w", key, err)
	}
	return nil
}

// GetRange implements ObjectStore.
func (s *S3) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length <= 0 {
		return nil, fmt.Errorf("tiered: get %s: bad range %d+%d", key, offset, length)
	}
	ctx, cancel := s.bounded(ctx, 0)
	defer cancel()
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key),
		Range: aws.String("bytes=" + strconv.FormatInt(offset, 10) + "-" + strconv.FormatInt(offset+length-1, 10))})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return nil, fmt.Errorf("tiered: get %s: %w", key, err)
	}
	defer out.Body.Close()
	// At most length bytes, whatever the server sends.
	b, err := io.ReadAll(io.LimitReader(out.Body, length))
	if err != nil {
		return nil, fmt.Errorf("tiered: get %s: %w", key, err)
	}
	return b, nil
}

// List implements ObjectStore.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	ctx, cancel := s.bounded(ctx, 0)
	defer cancel()
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: s.key(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("tiered: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			// A store that answers keys outside the prefix asked for is
			// wrong; what it names there is not ours to list.
			k, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix+prefix)
			if !ok {
				continue
			}
			out = append(out, Object{Key: prefix + k, Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// Delete implements ObjectStore.
func (s *S3) Delete(ctx context.Context, key string) error {
	ctx, cancel := s.bounded(ctx, 0)
	defer cancel()
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key)}); err != nil {
		return fmt.Errorf("tiered: delete %s: %w", key, err)
	}
	return nil
}
