package tiered

import "testing"

// TestSegmentIDOf: the id of a segment's object key, whatever its
// base64url characters; keys of another form have none.
func TestSegmentIDOf(t *testing.T) {
	seg := RemoteSegment{ID: "a-b_c-", BaseOffset: 42}
	p := Partition{Topic: "t-1", TopicID: "x-y", Partition: 3}
	tests := []struct {
		key string
		id  string
		ok  bool
	}{
		{seg.Key(p, "log"), "a-b_c-", true},
		{seg.ManifestKey(p), "a-b_c-", true},
		{"t-1-x-y/3/nodash", "", false},
		{"t-1-x-y/3/00000000000000000042-noext", "", false},
		{"t-1-x-y/3/00000000000000000042-.log", "", false},
	}
	for _, tt := range tests {
		if id, ok := segmentIDOf(tt.key); id != tt.id || ok != tt.ok {
			t.Errorf("segmentIDOf(%q) = %q, %v; want %q, %v", tt.key, id, ok, tt.id, tt.ok)
		}
	}
}
