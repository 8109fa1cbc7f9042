package tiered

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Metadata is one partition's remote log metadata, stored as JSON in one
// etcd key per partition (controller's remote_log/<topic id>/<p>) and
// written only by the partition's leader, in a transaction conditioned on
// its leader epoch, so that a deposed leader cannot write. A segment is
// recorded in Copying before its first object is written and moves to
// Segments once its manifest is; one in Deleting has left Segments and
// has its objects deleted next. An entry left in Copying or Deleting (a
// leader died or lost its leadership half way) is deleted by whichever
// broker leads next, so that no object outlives the metadata naming it.
//
//	{"version":1,
//	 "segments":[{"id":"…","base_offset":0,"start_offset":0,"end_offset":120,
//	              "max_timestamp":1733380000000,"leader_epoch":0,
//	              "sizes":{"log":4020,"index":24,"timeindex":36,"snapshot":10,"epochs":17,"txnindex":0}}],
//	 "copying":[…],"deleting":[…]}
type Metadata struct {
	Version int `json:"version"`
	// CopiedTo is where the copy stands, kept when remote retention
	// deletes every segment (CopiedEnd).
	CopiedTo int64           `json:"copied_to,omitempty"`
	Segments []RemoteSegment `json:"segments,omitempty"` // copied whole, ascending and contiguous
	Copying  []RemoteSegment `json:"copying,omitempty"`
	Deleting []RemoteSegment `json:"deleting,omitempty"`

	// CleanedTo, on a compacted topic, is where compaction of the remote
	// segments stands (compact.go): a remote record below it that a later
	// record below it supersedes is gone, so replicas may drop the
	// tombstones and markers of local segments ending at or below it.
	CleanedTo int64 `json:"cleaned_to,omitempty"`
}

// MetadataStore is where remote log metadata lives (controller.Store).
type MetadataStore interface {
	// RemoteLogMetadata returns the stored value and its revision (nil
	// and 0 when there is none).
	RemoteLogMetadata(ctx context.Context, topicID [16]byte, p int32) ([]byte, int64, error)
	// PutRemoteLogMetadata writes value if the revision is still rev and
	// leader leads the partition in leaderEpoch, returning the new
	// revision.
	PutRemoteLogMetadata(ctx context.Context, topic string, topicID [16]byte, p, leader, leaderEpoch int32, rev int64, value []byte) (int64, error)
	// DeleteRemoteLogMetadata removes the metadata of every partition of
	// a deleted topic.
	DeleteRemoteLogMetadata(ctx context.Context, topicID [16]byte) error
}

func decodeMetadata(b []byte) (Metadata, error) {
	var m Metadata
	if len(b) == 0 {
		return Metadata{Version: 1}, nil
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Metadata{}, fmt.Errorf("tiered: remote log metadata: %w", err)
	}
	return m, nil
}

// CopiedEnd is the offset the copy stands at: every offset below it that
// the log still holds is in a remote segment; 0 when none ever was.
func (m *Metadata) CopiedEnd() int64 {
	if len(m.Segments) == 0 {
		return m.CopiedTo
	}
	return max(m.CopiedTo, m.Segments[len(m.Segments)-1].EndOffset)
}

// StartOffset is the first offset a remote segment serves, -1 when none.
func (m *Metadata) StartOffset() int64 {
	if len(m.Segments) == 0 {
		return -1
	}
	return m.Segments[0].StartOffset
}

// Size is the bytes of the remote segments' record batches.
func (m *Metadata) Size() int64 {
	var n int64
	for _, s := range m.Segments {
		n += s.LogSize()
	}
	return n
}

// SegmentFor returns the remote segment serving offset, if one does.
func (m *Metadata) SegmentFor(offset int64) (RemoteSegment, bool) {
	i, _ := slices.BinarySearchFunc(m.Segments, offset, func(s RemoteSegment, o int64) int {
		switch {
		case s.EndOffset <= o:
			return -1
		case s.StartOffset > o:
			return 1
		}
		return 0
	})
	if i < len(m.Segments) && m.Segments[i].StartOffset <= offset && offset < m.Segments[i].EndOffset {
		return m.Segments[i], true
	}
	return RemoteSegment{}, false
}

func (m *Metadata) clone() Metadata {
	return Metadata{Version: 1, CopiedTo: m.CopiedTo, CleanedTo: m.CleanedTo, Segments: slices.Clone(m.Segments), Copying: slices.Clone(m.Copying), Deleting: slices.Clone(m.Deleting)}
}

func without(list []RemoteSegment, id string) []RemoteSegment {
	return slices.DeleteFunc(slices.Clone(list), func(s RemoteSegment) bool { return s.ID == id })
}
