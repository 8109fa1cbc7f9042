// Package tiered is samsa's tiered storage (KIP-405), beside the log as
// Kafka's RemoteLogManager is: the object store behind an interface, S3
// its first implementation (configured with the property names of Aiven's
// tiered-storage-for-apache-kafka plugin, see internal/config), the
// upload of a rolled segment with its companion files, the remote log
// metadata (metadata.go: one etcd key per partition, written by its
// leader fenced on its leader epoch; the bucket's manifests are the
// completeness check) and the Manager, whose leader-only passes copy the
// rolled segments below the last stable offset and apply remote
// retention, and whose passes on every replica apply local retention.
// Reads below the local log come from the object store through a chunk
// cache of bounded size (reader.go, cache.go), as bytes regions of
// logstore's SegmentSource seam.
package tiered

import (
	"context"
	"errors"
	"io"
)

// ErrNotFound is a Get of a key the store does not hold.
var ErrNotFound = errors.New("tiered: no such object")

// Object is a key listed by ObjectStore.List, with its size.
type Object struct {
	Key  string
	Size int64
}

// ObjectStore is where remote segments live. Keys are '/'-separated
// paths; an object is written whole (a reader never sees part of a Put).
type ObjectStore interface {
	// Put stores size bytes read from body at key, replacing any object.
	Put(ctx context.Context, key string, body io.ReadSeeker, size int64) error
	// GetRange returns length bytes of the object at key from offset
	// (fewer at its end); ErrNotFound when there is no such object.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes the object at key; deleting a missing key is no error.
	Delete(ctx context.Context, key string) error
}
