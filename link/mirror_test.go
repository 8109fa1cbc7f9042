package link

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/poll"
)

// reachSink is a Sink whose partitions are at offset 5 and whose first
// failReached Reached calls fail.
type reachSink struct {
	mu          sync.Mutex
	failReached int
	calls       int
	reached     bool
}

func (s *reachSink) End(string, int32, int32) (int64, error)               { return 5, nil }
func (s *reachSink) Append(string, int32, int32, []byte) error             { return nil }
func (s *reachSink) StartAt(string, int32, int32, int64) error             { return nil }
func (s *reachSink) AdvanceStart(string, int32, int32, int64) error        { return nil }
func (s *reachSink) Batch(string, int32, int32, int64) ([]byte, error)     { return nil, nil }
func (s *reachSink) SourceTopicID(_ string, id [16]byte) ([16]byte, error) { return id, nil }
func (s *reachSink) Reached(string, int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failReached {
		return errors.New("etcd: request timed out")
	}
	s.reached = true
	return nil
}

// A partition that reached its promote target while the write saying so
// failed writes it again until it succeeds (else its topic would stay
// "promoting" for good).
func TestReachedRetried(t *testing.T) {
	sink := &reachSink{failReached: 2}
	m := NewManager(Config{Sink: sink, Backoff: time.Millisecond})
	defer m.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")) // never dialed
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.links["l"] = &source{spec: &Spec{Name: "l"}, cl: cl}
	m.mu.Unlock()
	m.Assign([]Assignment{{Link: "l", Topic: "t", Partition: 0, Epoch: 1, Target: 5}})
	poll.Eventually(t, 10*time.Second, func() error {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if !sink.reached {
			return errors.New("promote target not recorded")
		}
		return nil
	})
	if sink.calls != 3 {
		t.Errorf("Reached called %d times, want 3", sink.calls)
	}
}
