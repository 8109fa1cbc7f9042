package link

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHistory: a sample per interval (a later one in the same interval
// replaces it), the lag summed over a link's partitions and the seconds
// of the furthest behind, at most HistoryLen kept, and nothing for a
// link not running here.
func TestHistory(t *testing.T) {
	now := time.UnixMilli(10_000)
	m := NewManager(Config{HistoryEvery: time.Second, HistoryLen: 3, Now: func() time.Time { return now }})
	defer m.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")) // never dialed
	if err != nil {
		t.Fatal(err)
	}
	m.links["l"] = &source{spec: &Spec{Name: "l"}, cl: cl}
	set := func(topic string, p int32, end, mirror int64, caughtUp time.Time) {
		k := partKey{topic, p}
		m.status[k] = &PartitionStatus{Link: "l", Topic: topic, Partition: p, SourceEnd: end, MirrorEnd: mirror}
		m.caughtUp[k] = caughtUp
	}
	m.status[partKey{"gone", 0}] = &PartitionStatus{Link: "gone", SourceEnd: 9, MirrorEnd: 0}
	set("a", 0, 10, 4, now.Add(-3*time.Second))
	set("a", 1, 7, 5, now.Add(-7*time.Second))
	m.Sample(now)
	set("a", 0, 10, 6, now.Add(-3*time.Second))
	m.Sample(now.Add(900 * time.Millisecond)) // same interval: replaces
	want := []LagSample{{Time: 10_000, Records: 6, Seconds: 7}}
	if got := m.History("l"); !slices.Equal(got, want) {
		t.Fatalf("history %+v, want %+v", got, want)
	}
	for i := range 4 {
		now = now.Add(time.Second)
		set("a", 1, 7, 7, now)
		set("a", 0, 10, int64(7+i), now.Add(-time.Second))
		m.Sample(now)
	}
	want = []LagSample{{12_000, 2, 1}, {13_000, 1, 1}, {14_000, 0, 0}}
	if got := m.History("l"); !slices.Equal(got, want) {
		t.Fatalf("history %+v, want %+v", got, want)
	}
	if got := m.History("gone"); len(got) != 0 {
		t.Fatalf("history of a link not running here: %+v", got)
	}
	m.SetLinks(nil)
	if got := m.History("l"); len(got) != 0 {
		t.Fatalf("history of a deleted link: %+v", got)
	}
}
