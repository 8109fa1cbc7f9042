// Package tiered is samsa's tiered storage (KIP-405), beside the log as
// Kafka's RemoteLogManager is: the object store behind an interface, S3
// its first implementation (configured with the property names of Aiven's
// tiered-storage-for-apache-kafka plugin, see internal/config), and the
// upload of a rolled segment with its companion files.
//
// This is the first slice of issue 26: the store and the copy of one
// segment. Which segments a partition's leader copies, the remote log
// metadata that records them, local retention and remote reads come next.
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
