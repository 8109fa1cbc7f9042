package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestConsoleLinksInBrowser: the Links page shows each cluster link with
// its state and errors, its mirror partitions with the source's end
// offset, the mirror's and the lag, and plots of its lag over time. The
// source is another samsa broker; a second link's source is unreachable.
func TestConsoleLinksInBrowser(t *testing.T) {
	src := testutil.StartBroker(t, nil)
	n, _ := startHTTPBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scl, err := kgo.NewClient(kgo.SeedBrokers(src.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	if _, err := kadm.NewClient(scl).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 7 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	if err := scl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm, err := admin.New([]string{n.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for name, bootstrap := range map[string]string{"from-src": src.Addr(), "from-nowhere": "127.0.0.1:1"} {
		if err := adm.AlterLink(ctx, name, map[string]string{"create": "", "source.bootstrap.servers": bootstrap, "topics": "orders",
			"metadata.refresh.interval.ms": "200"}, nil); err != nil {
			t.Fatalf("creating link %s: %v", name, err)
		}
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		l, err := adm.Link(ctx, "from-src")
		if err != nil {
			return err
		}
		ends := map[int32]int64{}
		for _, p := range l.Partitions {
			if p.Lag == 0 && p.SourceEnd == p.MirrorEnd {
				ends[p.Partition] = p.MirrorEnd
			}
		}
		if ends[0] != 4 || ends[1] != 3 {
			return fmt.Errorf("mirror partitions not caught up: %+v", l.Partitions)
		}
		if l, err := adm.Link(ctx, "from-nowhere"); err != nil || l.Errors[""] == "" {
			return fmt.Errorf("the unreachable link has no error yet: %+v %v", l.Errors, err)
		}
		return nil
	})

	b := browser(t)
	c := newConsole(t, b, "http://"+n.HTTPAddr()+"/")
	// The page refreshes itself: wait for both links' plots with a sample.
	c.open("#/links", `.link[data-link="from-src"] svg.plot`)
	ready := `document.querySelectorAll('.link[data-link="from-src"] svg.plot path.line, .link[data-link="from-src"] svg.plot circle').length === 2 &&
		document.querySelector('.link[data-link="from-nowhere"] .errors') !== null`
	if _, err := chromedp.Run(b, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		text, _ := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
		t.Fatalf("the Links page with two plots and an error: %v\npage:\n%s", err, text)
	}
	rows, err := chromedp.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.link[data-link="from-src"] table[id$="-partitions"] tbody tr')].map(r => r.innerText.replace(/\s+/g, " ").trim())`))
	if err != nil {
		t.Fatal(err)
	}
	// Topic, partition, leader, source end, mirror end, lag, lag seconds.
	want := []string{"orders 0 1 4 4 0 0", "orders 1 1 3 3 0 0"}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("from-src partitions %q, want %q", rows, want)
	}
	text, err := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"from-src", "from-nowhere", "active", "mirroring", "Lag (records)", "Lag (seconds)", src.Addr(), "127.0.0.1:1"} {
		if !strings.Contains(text, want) {
			t.Errorf("Links page: no %q in\n%s", want, text)
		}
	}
	png, err := chromedp.Run(b, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifacts(t), "links.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
