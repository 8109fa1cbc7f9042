package broker

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/controller"
)

func TestValidateTopicName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a.b_c-D9", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"has space", false},
		{"slash/", false},
		{"ünicode", false},
	}
	for _, tt := range tests {
		err := validateTopicName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("validateTopicName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("validateTopicName(%q) = %v, want INVALID_TOPIC_EXCEPTION", tt.name, err)
		}
	}
}

func TestAssignReplicas(t *testing.T) {
	brokers := []int32{1, 2, 3}
	got := assignReplicas(brokers, 4, 2, 1)
	want := [][]int32{{2, 3}, {3, 1}, {1, 2}, {2, 3}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("assignReplicas = %v, want %v", got, want)
	}
	// Every partition has distinct replicas and leaders spread evenly.
	leaders := map[int32]int{}
	for _, rs := range assignReplicas(brokers, 30, 3, 0) {
		if len(rs) != 3 || rs[0] == rs[1] || rs[1] == rs[2] || rs[0] == rs[2] {
			t.Fatalf("replicas %v", rs)
		}
		leaders[rs[0]]++
	}
	for b, n := range leaders {
		if n != 10 {
			t.Errorf("broker %d leads %d of 30 partitions", b, n)
		}
	}
}

func TestValidateAssignment(t *testing.T) {
	live := []int32{1, 2, 3}
	tests := []struct {
		name string
		a    [][]int32
		rf   int
		ok   bool
	}{
		{"fine", [][]int32{{1, 2}, {2, 3}}, -1, true},
		{"rf given", [][]int32{{1, 2}}, 2, true},
		{"rf mismatch", [][]int32{{1, 2}, {3}}, -1, false},
		{"rf differs from the topic", [][]int32{{1}}, 2, false},
		{"unknown broker", [][]int32{{1, 7}}, -1, false},
		{"duplicate replica", [][]int32{{2, 2}}, -1, false},
		{"empty", [][]int32{{}}, -1, false},
	}
	for _, tt := range tests {
		err := validateAssignment(tt.a, live, tt.rf)
		if (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, kerr.InvalidReplicaAssignment) {
			t.Errorf("%s: %v, want INVALID_REPLICA_ASSIGNMENT", tt.name, err)
		}
	}
}

// hasBrokers decides when a request's brokers are read again from etcd:
// when the list lacks brokers for the replication factor or a broker the
// assignment names.
func TestHasBrokers(t *testing.T) {
	bs := []controller.BrokerInfo{{ID: 1}, {ID: 2}}
	tests := []struct {
		name       string
		rf         int
		assignment [][]int32
		want       bool
	}{
		{"rf within", 2, nil, true},
		{"rf beyond", 3, nil, false},
		{"assignment of known brokers", 0, [][]int32{{1, 2}, {2}}, true},
		{"assignment naming another broker", 0, [][]int32{{1}, {3, 1}}, false},
		{"nothing needed", 0, nil, true},
	}
	for _, tt := range tests {
		if got := hasBrokers(tt.rf, tt.assignment...)(bs); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
