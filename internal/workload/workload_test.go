package workload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noClient is a NewClient for tests that make no client.
func noClient(...kgo.Opt) (*kgo.Client, error) { return nil, errors.New("no cluster in this test") }

func testWorkload(t *testing.T) *Workload {
	t.Helper()
	w := newWorkload(Config{NewClient: noClient, Topic: "t", Partitions: 2})
	t.Cleanup(w.Stop)
	return w
}

// whats is every violation's text, in order.
func whats(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out
}

func wantViolations(t *testing.T, got []Violation, want ...string) {
	t.Helper()
	g := whats(got)
	slices.Sort(g)
	slices.Sort(want)
	if !slices.Equal(g, want) {
		t.Errorf("violations:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none: valid
	}{
		{"valid", Config{NewClient: noClient, Topic: "t", Partitions: 1, Producers: 1}, nil},
		{"empty", Config{}, []string{"NewClient required", "Topic required", "Partitions 0 < 1"}},
		{"negative count", Config{NewClient: noClient, Topic: "t", Partitions: 1, GroupReaders: -1}, []string{"negative client count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate: nil error")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Validate: %v, want it to say %q", err, s)
				}
			}
		})
	}
}

func TestStartRefusesInvalidConfig(t *testing.T) {
	if _, err := Start(Config{Topic: "t", Partitions: 1}); err == nil {
		t.Fatal("Start without NewClient: nil error")
	}
}

func TestStartReturnsClientError(t *testing.T) {
	_, err := Start(Config{NewClient: noClient, Topic: "t", Partitions: 1, Producers: 1})
	if err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Fatalf("Start: %v, want NewClient's error", err)
	}
}

func TestGroupDefaultsToTopicReaders(t *testing.T) {
	w := newWorkload(Config{NewClient: noClient, Topic: "orders", Partitions: 1})
	defer w.Stop()
	if w.cfg.Group != "orders-readers" {
		t.Fatalf("group %q, want orders-readers", w.cfg.Group)
	}
}

func TestViolationString(t *testing.T) {
	tests := []struct {
		v    Violation
		want string
	}{
		{Violation{Partition: 2, Offset: 7, What: "lost"}, "partition 2 offset 7: lost"},
		{Violation{Partition: 2, Offset: -1, What: "behind"}, "partition 2: behind"},
		{Violation{Partition: -1, Offset: -1, What: "franz-go: lost records"}, "franz-go: lost records"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestProducerAckBelowLastIsAViolation(t *testing.T) {
	w := testWorkload(t)
	last := map[int32]int64{}
	now := time.Now()
	w.mu.Lock()
	w.acknowledged(last, 0, 0, 5, "a", now)
	w.acknowledged(last, 0, 1, 3, "b", now) // another partition: its own order
	w.acknowledged(last, 0, 0, 6, "c", now)
	w.acknowledged(last, 0, 0, 6, "d", now)
	w.mu.Unlock()
	wantViolations(t, w.problems, "partition 0 offset 6: producer 0: acked offset 6 after 6")
	if w.Acks() != 4 {
		t.Errorf("Acks %d, want 4", w.Acks())
	}
}

func TestReaderRewindWithinAssignment(t *testing.T) {
	w := testWorkload(t)
	r := &reader{w: w, name: "r", last: map[int32]int64{}}
	read := func(p int32, off int64, v string) {
		r.mu.Lock()
		w.mu.Lock()
		r.read(p, off, v)
		w.mu.Unlock()
		r.mu.Unlock()
	}
	read(0, 10, "a")
	read(0, 11, "b")
	read(0, 11, "b") // the same offset again: rewound
	r.forget(context.Background(), nil, map[string][]int32{"t": {0}, "other": {1}})
	read(0, 10, "a") // a new assignment may start anywhere
	read(1, 4, "x")
	read(1, 3, "y")
	wantViolations(t, w.problems,
		"partition 0 offset 11: r: rewound from offset 11 to 11",
		"partition 1 offset 3: r: rewound from offset 4 to 3")
	if w.nRead != 6 {
		t.Errorf("nRead %d, want 6", w.nRead)
	}
}

func TestOffsetReadWithTwoValues(t *testing.T) {
	w := testWorkload(t)
	r1 := &reader{w: w, name: "r1", last: map[int32]int64{}}
	r2 := &reader{w: w, name: "r2", last: map[int32]int64{}}
	w.mu.Lock()
	r1.read(0, 3, "a")
	r2.read(0, 3, "b")
	r2.read(1, 3, "a") // another partition
	w.mu.Unlock()
	wantViolations(t, w.problems, `partition 0 offset 3: r2: offset read as "a" and as "b"`)
}

func TestCommittedOffsetGoingBackFlaggedOnce(t *testing.T) {
	w := testWorkload(t)
	w.mu.Lock()
	for _, at := range []int64{5, 9, 7, 8, 9, 10, 6} {
		w.committedAt(0, at)
	}
	w.committedAt(1, 3)
	w.mu.Unlock()
	wantViolations(t, w.problems,
		"partition 0 offset 7: committed offset of group t-readers went back from 9 to 7",
		"partition 0 offset 6: committed offset of group t-readers went back from 10 to 6")
}

func TestVerify(t *testing.T) {
	w := testWorkload(t)
	base := time.Now()
	w.mu.Lock()
	w.phases = []phaseSpan{{"kill leader", base}, {"heal", base.Add(time.Second)}}
	w.acked[0] = []ack{{0, "a", base.Add(-time.Millisecond)}, {1, "b", base.Add(500 * time.Millisecond)},
		{2, "c", base.Add(2 * time.Second)}, {3, "d", base.Add(2 * time.Second)}}
	w.acked[1] = []ack{{0, "e", base.Add(2 * time.Second)}}
	w.seen[0] = map[int64]string{0: "a", 2: "z"}
	w.phase = "read back"
	w.verify(map[int32]map[int64]string{
		0: {0: "a", 1: "x", 2: "c"}, // b overwritten by x, d lost, offset 2 read as z before
		1: {0: "c", 1: "e"},         // c written twice, e at another offset
	})
	vs := slices.Clone(w.problems)
	w.mu.Unlock()

	var twice []Violation
	vs = slices.DeleteFunc(vs, func(v Violation) bool {
		if strings.Contains(v.What, "written twice") {
			twice = append(twice, v)
			return true
		}
		return false
	})
	wantViolations(t, vs,
		`partition 0 offset 2: read by a reader as "z", read back as "c"`,
		`partition 0 offset 1: holds "x", acknowledged "b" (read back nowhere)`,
		`partition 0 offset 3: acknowledged record "d" lost (read back nowhere)`,
		`partition 1 offset 0: holds "c", acknowledged "e" (read back at offset 1)`)
	if len(twice) != 1 || twice[0].What != `record "c" written twice, at offsets 0 and 2` {
		t.Errorf("written twice: %v, want one for \"c\" at offsets 0 and 2", twice)
	}
	for _, v := range vs {
		want := "read back"
		switch {
		case v.Partition == 0 && v.Offset == 1:
			want = "kill leader" // when b was acknowledged
		case v.Offset == 3 || v.Partition == 1:
			want = "heal"
		}
		if v.Phase != want {
			t.Errorf("%v: phase %q, want %q", v, v.Phase, want)
		}
	}
}

func TestPhaseAt(t *testing.T) {
	w := testWorkload(t)
	base := time.Now()
	w.phases = []phaseSpan{{"one", base}, {"two", base.Add(time.Second)}}
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{base.Add(-time.Nanosecond), "setup"},
		{base, "one"},
		{base.Add(time.Second - 1), "one"},
		{base.Add(time.Second), "two"},
		{base.Add(time.Hour), "two"},
	} {
		if got := w.phaseAt(tt.at); got != tt.want {
			t.Errorf("phaseAt(base%+v) = %q, want %q", tt.at.Sub(base), got, tt.want)
		}
	}
}

func TestSetPhaseNamesReports(t *testing.T) {
	w := testWorkload(t)
	w.Report(-1, -1, "before")
	w.SetPhase("cut")
	w.Report(1, -1, "during %d", 1)
	if len(w.problems) != 2 || w.problems[0].Phase != "setup" || w.problems[1].Phase != "cut" {
		t.Fatalf("problems %+v, want one in setup and one in cut", w.problems)
	}
	wantViolations(t, w.problems, "before", "partition 1: during 1")
}

func TestReadBackOfOneOffsetWithTwoValues(t *testing.T) {
	w := testWorkload(t)
	got := map[int32]map[int64]string{}
	w.mu.Lock()
	w.readBackOne(got, 0, 4, "a")
	w.readBackOne(got, 0, 4, "a")
	w.readBackOne(got, 0, 4, "b")
	w.mu.Unlock()
	wantViolations(t, w.problems, `partition 0 offset 4: read back: offset read as "a" and as "b"`)
}

func TestReportsCapped(t *testing.T) {
	w := testWorkload(t)
	for i := range maxReported + 10 {
		w.Report(0, int64(i), "x")
	}
	if len(w.problems) != maxReported {
		t.Fatalf("%d problems kept, want %d", len(w.problems), maxReported)
	}
}

func TestLossLoggerReports(t *testing.T) {
	w := testWorkload(t)
	l := &lossLogger{w: w, name: "assign reader 0"}
	l.Log(kgo.LogLevelWarn, "topic t partition 0 lost records; ...", "broker", 1)
	l.Log(kgo.LogLevelWarn, "received OFFSET_OUT_OF_RANGE while consuming; ...")
	l.Log(kgo.LogLevelInfo, "assigning partitions")
	if len(w.problems) != 2 {
		t.Fatalf("problems %v, want the two reports of loss", whats(w.problems))
	}
	if !strings.HasPrefix(w.problems[0].What, "assign reader 0: franz-go: topic t partition 0 lost records") {
		t.Errorf("problem %q", w.problems[0].What)
	}
}

func TestCheckWithNothingAcknowledged(t *testing.T) {
	w := testWorkload(t)
	made := false
	w.cfg.NewClient = func(...kgo.Opt) (*kgo.Client, error) { made = true; return noClient() }
	w.Report(0, 1, "seen before")
	vs, err := w.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nothing was acknowledged") {
		t.Fatalf("Check: %v, want nothing was acknowledged", err)
	}
	wantViolations(t, vs, "partition 0 offset 1: seen before")
	if made {
		t.Error("Check made a client with nothing to read back")
	}
}

func TestCheckReturnsReadBackError(t *testing.T) {
	w := testWorkload(t)
	w.mu.Lock()
	w.acknowledged(map[int32]int64{}, 0, 0, 0, "a", time.Now())
	w.mu.Unlock()
	if _, err := w.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "no cluster") {
		t.Fatalf("Check: %v, want the client's error", err)
	}
}

func TestGoStopsWithTheWorkload(t *testing.T) {
	w := testWorkload(t)
	ended := make(chan struct{})
	if !w.Go(func(ctx context.Context) { <-ctx.Done(); close(ended) }) {
		t.Fatal("Go before Stop ran nothing")
	}
	w.Stop()
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the goroutine ended")
	}
	if w.Go(func(context.Context) { t.Error("ran after Stop") }) {
		t.Fatal("Go after Stop reported true")
	}
	w.Stop() // twice is fine
}

func TestAckTimesAndSummary(t *testing.T) {
	w := testWorkload(t)
	base := time.Now()
	last := map[int32]int64{}
	w.mu.Lock()
	w.acknowledged(last, 0, 0, 0, "a", base)
	w.acknowledged(last, 0, 1, 0, "b", base.Add(time.Second))
	w.acknowledged(last, 0, 1, 1, "c", base.Add(2*time.Second))
	w.failed = 3
	w.nRead = 7
	w.mu.Unlock()
	got := w.AckTimes(base, base.Add(2*time.Second))
	if len(got[-1]) != 2 || len(got[0]) != 1 || len(got[1]) != 1 {
		t.Errorf("AckTimes [base, base+2s): %v, want a and b", got)
	}
	if s, want := w.Summary(), "3 records acknowledged, 3 produces indeterminate, 7 records read"; s != want {
		t.Errorf("Summary %q, want %q", s, want)
	}
}
