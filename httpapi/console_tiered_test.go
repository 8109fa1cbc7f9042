package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestConsoleTieredTopic: the page of a topic with remote.storage.enable
// shows, besides the leaders' local size, the remote size, the upload
// lag and the remote fetch rate, and per partition the local and remote
// sizes and the upload lag, as the API's JSON has them once the broker
// copied its rolled segments to a real bucket (versitygw).
func TestConsoleTieredTopic(t *testing.T) {
	st := s3test.Start(t, "tiered")
	n := testutil.StartBroker(t, st.TieredProps("samsa.http.listener", "127.0.0.1:0",
		"remote.log.manager.task.interval.ms", "100", "log.retention.check.interval.ms", "100"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "cold"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"remote.storage.enable": kadm.StringPtr("true"),
		"local.retention.bytes": kadm.StringPtr("0"), "internal.segment.bytes": kadm.StringPtr("4096")}, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%03d-%s", i, strings.Repeat("v", 400)))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got admin.Topic
	testutil.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/api/topics/" + topic)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return err
		}
		if r := got.Partitions[0].Remote; got.Tiered == nil || r == nil || r.RemoteSegments == 0 || r.CopyLagSegments != 0 || r.CopiedEndOffset != 30 || r.LocalStartOffset != 30 || r.LocalBytes != 0 {
			return fmt.Errorf("not all copied yet: %+v", got.Partitions[0])
		}
		return nil
	})

	b := browser(t)
	c := newConsole(t, b, "http://"+n.HTTPAddr()+"/")
	text := c.open("#/topics/"+topic, "#topic-remote")
	for _, want := range []string{"local size (leaders)", "remote size", "upload lag", "remote fetch (1 min)", "Local size", "Remote size", "Upload lag"} {
		if !strings.Contains(strings.ToLower(text), strings.ToLower(want)) {
			t.Errorf("topic page: no %q in\n%s", want, text)
		}
	}
	kib := func(n int64) string { // the console's size() under 1 MiB
		if n < 1024 {
			return fmt.Sprintf("%d B", n)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	r := got.Partitions[0].Remote
	stats, err := chromedp.Run(b, chromedp.Evaluate[[]string](`["#topic-size", "#topic-remote", "#topic-upload-lag", "#topic-remote-fetch", "#partitions tbody tr"].map(s => document.querySelector(s).innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{kib(r.LocalBytes), kib(r.RemoteBytes), "0 B", "0 B/s"}; strings.Join(stats[:4], "|") != strings.Join(want, "|") {
		t.Errorf("topic page's stats %q, want %q", stats[:4], want)
	}
	if !strings.HasSuffix(stats[4], kib(r.LocalBytes)+"\t"+kib(r.RemoteBytes)+"\t0 B") {
		t.Errorf("partition row %q, want local %s, remote %s, upload lag 0 B", stats[4], kib(r.LocalBytes), kib(r.RemoteBytes))
	}
}
