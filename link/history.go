package link

import "time"

// History of each link's lag on this broker, for the console's plot: a
// sample every HistoryEvery (default 5 s) at times truncated to it, so
// that the samples of every broker line up and add up, and at most
// HistoryLen (default 720: an hour) per link, oldest dropped.

// LagSample is a link's lag over the mirror partitions led here at one
// time: the records behind, summed, and the seconds behind of the
// partition furthest behind.
type LagSample struct {
	Time    int64 `json:"t"` // unix milliseconds, a multiple of HistoryEvery
	Records int64 `json:"records"`
	Seconds int64 `json:"seconds"`
}

// Sample records the lag of every link with a mirror partition led here
// as at now; a second call within the same interval replaces the first.
func (m *Manager) Sample(now time.Time) {
	t := now.Truncate(m.cfg.HistoryEvery).UnixMilli()
	cur := map[string]*LagSample{}
	for _, st := range m.Status() {
		s := cur[st.Link]
		if s == nil {
			s = &LagSample{Time: t}
			cur[st.Link] = s
		}
		s.Records += st.Lag
		s.Seconds = max(s.Seconds, st.LagSeconds)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, s := range cur {
		if m.links[name] == nil {
			continue
		}
		h := m.history[name]
		if n := len(h); n > 0 && h[n-1].Time == t {
			h[n-1] = *s
			continue
		}
		if len(h) >= m.cfg.HistoryLen {
			h = append(h[:0], h[len(h)-m.cfg.HistoryLen+1:]...)
		}
		m.history[name] = append(h, *s)
	}
}

// History is a link's lag samples here, oldest first.
func (m *Manager) History(link string) []LagSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]LagSample(nil), m.history[link]...)
}
