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
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/browsertest"
	"github.com/samsa-io/samsa/internal/testutil"
)

// browser starts headless Chromium for one tab (browsertest.Start).
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t)
}

// artifacts is where the test's screenshots go: $SAMSA_CONSOLE_ARTIFACTS,
// or a new directory under the system's temp directory (printed).
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SAMSA_CONSOLE_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "samsa-console-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshots in %s", dir)
	return dir
}

// TestConsoleInBrowser drives the web console in headless Chromium: every
// page renders what the cluster holds, and the changes made through it
// (create and delete a topic, set and reset a config, reset a group's
// offsets) reach the cluster, checked with a separate Kafka client.
func TestConsoleInBrowser(t *testing.T) {
	n, cl := startHTTPBroker(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 6 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprintf("order-%d", i)),
			Value:   []byte(fmt.Sprintf(`{"id":%d,"item":"widget","qty":%d}`, i, i+1)),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("test")}}})
	}
	recs = append(recs, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte{0xde, 0xad, 0xbe, 0xef}})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 2, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "billing", offs); err != nil {
		t.Fatal(err)
	}

	dir := artifacts(t)
	b := browser(t)
	base := "http://" + n.HTTPAddr() + "/"
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b, chromedp.CaptureScreenshot()) // the window, 1360x900
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := newConsole(t, b, base).open
	// await polls a JavaScript condition in the page.
	await := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(b, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			text, _ := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
			t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, text)
		}
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(b, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// contains looks for text as shown (innerText: CSS capitalisation
	// applies, so case is ignored).
	contains := func(where, text string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(strings.ToLower(text), strings.ToLower(w)) {
				t.Errorf("%s: no %q in\n%s", where, w, text)
			}
		}
	}

	text := page("#/brokers", "#brokers")
	contains("brokers", text, "healthy", "127.0.0.1", "★ controller")
	shot("brokers.png")

	text = page("#/topics", "#topics")
	contains("topics", text, "orders")
	run("create a topic",
		chromedp.SendKeys(chromedp.CSS(`#create-topic [name=name]`), "from-browser"),
		chromedp.SendKeys(chromedp.CSS(`#create-topic [name=partitions]`), "2"),
		chromedp.SendKeys(chromedp.CSS(`#create-topic [name=configs]`), "retention.ms=7200000"),
		chromedp.Click(chromedp.CSS(`#create-topic button`)))
	await("the new topic's page", `document.querySelectorAll("#partitions tbody tr").length === 2 && document.getElementById("topic-name").textContent === "from-browser"`)
	md, err := adm.Metadata(ctx, "from-browser")
	if err != nil || len(md.Topics["from-browser"].Partitions) != 2 {
		t.Fatalf("created in the browser: %v %+v", err, md.Topics["from-browser"])
	}
	if v := topicConfig(t, adm, "from-browser", "retention.ms"); v != "7200000" {
		t.Fatalf("created with retention.ms=7200000, the cluster has %q", v)
	}

	// Set a config, then reset it to its default.
	run("set a config",
		chromedp.SendKeys(chromedp.CSS(`#alter-config [name=key]`), "max.message.bytes"),
		chromedp.SendKeys(chromedp.CSS(`#alter-config [name=value]`), "65536"),
		chromedp.Click(chromedp.CSS(`#alter-config button`)))
	await("the config set", `[...document.querySelectorAll("#configs tr")].some(r => r.textContent.includes("max.message.bytes") && r.textContent.includes("65536"))`)
	if v := topicConfig(t, adm, "from-browser", "max.message.bytes"); v != "65536" {
		t.Fatalf("max.message.bytes set in the browser, the cluster has %q", v)
	}
	run("reset the config", chromedp.Click(chromedp.CSS(`[data-reset="max.message.bytes"]`)))
	await("the config reset", `!document.querySelector('[data-reset="max.message.bytes"]') && document.querySelector("#configs") !== null`)
	if v := topicConfig(t, adm, "from-browser", "max.message.bytes"); v == "65536" {
		t.Fatal("max.message.bytes reset in the browser, the cluster still has 65536")
	}

	// Delete it (the page asks to confirm).
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`(window.confirm = () => true, true)`)); err != nil {
		t.Fatal(err)
	}
	run("delete the topic", chromedp.Click(chromedp.CSS(`#delete-topic`)))
	await("the topic list", `location.hash === "#/topics" && document.getElementById("topics") !== null`)
	testutil.Eventually(t, 20*time.Second, func() error {
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if td.Has("from-browser") {
			return fmt.Errorf("from-browser still exists")
		}
		return nil
	})

	text = page("#/topics/orders", "#partitions")
	contains("topic orders", text, "orders", "retention.ms", "cleanup.policy", "Browse messages", "size (leaders)")
	await("the size of orders' logs", `/^\d+(\.\d)? (B|KiB)$/.test(document.getElementById("topic-size").textContent) && document.getElementById("topic-size").textContent !== "0 B"`)
	shot("topic.png")

	text = page("#/groups", "#groups")
	contains("groups", text, "billing", "Empty")
	text = page("#/groups/billing", "#offsets")
	contains("group billing", text, "billing", "orders")
	// kadm counts an empty group's partitions without a commit from their start: 4 + 1 + 0.
	await("the lag of orders (6 records in orders-0, committed 2; 1 in orders-1)", `document.getElementById("total-lag").textContent === "5" && document.getElementById("lag-plot") !== null`)
	shot("group.png")
	run("reset the group to the start",
		chromedp.SetValue(chromedp.CSS(`#seek-group [name=kind]`), "start"),
		chromedp.Click(chromedp.CSS(`#seek-group button`)))
	await("the lag after the reset", `document.getElementById("total-lag").textContent === "7"`)
	fo, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fo.Lookup("orders", 0); !ok || o.At != 0 {
		t.Fatalf("after the reset in the browser, billing's offset of orders-0 is %+v", o)
	}

	text = page("#/messages?topic=orders&partition=0&from=4&format=json", "#messages")
	contains("messages as JSON", text, `"id": 4`, `"item": "widget"`, "order-5", "source")
	if strings.Contains(text, `"id": 3`) {
		t.Errorf("messages from offset 4 show offset 3:\n%s", text)
	}
	shot("messages.png")
	text = page("#/messages?topic=orders&partition=1&format=hex", "#messages")
	contains("messages as hex", text, "de ad be ef", "null")
	text = page("#/messages?topic=orders&partition=0&from=start&limit=2&format=text", "#messages")
	contains("messages as text", text, `{"id":0,"item":"widget","qty":1}`, "2 message(s)")
}

// console opens the console's pages in a browser tab.
type console struct {
	t      *testing.T
	b      context.Context
	base   string
	opened bool
}

func newConsole(t *testing.T, b context.Context, base string) *console {
	return &console{t: t, b: b, base: base}
}

// open opens a route (the first time the console itself, then by its
// hash, as a click on a link does), waits until the console has rendered
// it, with an element sel, and returns the page's text.
func (c *console) open(route, sel string) string {
	t, b := c.t, c.b
	t.Helper()
	var err error
	if !c.opened {
		err = chromedp.Do(b, chromedp.Navigate(c.base+route))
		c.opened = true
	} else {
		_, err = chromedp.Run(b, chromedp.Evaluate[bool](fmt.Sprintf("(location.hash = %q, true)", route)))
	}
	if err != nil {
		t.Fatalf("opening %s: %v", route, err)
	}
	ready := fmt.Sprintf("document.getElementById(\"view\").dataset.route === %q && document.querySelector(%q) !== null", route, sel)
	if _, err := chromedp.Run(b, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		text, _ := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
		t.Fatalf("%s: waiting for %s: %v\npage:\n%s", route, sel, err, text)
	}
	text, err := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
	if err != nil {
		t.Fatalf("%s: %v", route, err)
	}
	return text
}

// TestConsoleSchemasInBrowser: the Schemas page lists the registry's
// subjects, and a subject's page its versions, newest first, with their
// schemas, the subject's compatibility level and a diff between two
// versions (the two newest, or those ?from= and ?to= name).
func TestConsoleSchemasInBrowser(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0", "samsa.schema.registry.listener": "127.0.0.1:0"})
	rc, err := sr.NewClient(sr.URLs("http://" + n.RegistryAddr()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := rc.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`})
		return err
	})
	if _, err := rc.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.CreateSchema(ctx, "users-value", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	c := newConsole(t, browser(t), "http://"+n.HTTPAddr()+"/")
	text := c.open("#/schemas", "#subjects")
	for _, want := range []string{"orders-value", "users-value", "BACKWARD"} {
		if !strings.Contains(text, want) {
			t.Errorf("schemas page: no %q in\n%s", want, text)
		}
	}
	text = c.open("#/schemas/orders-value", "#versions")
	for _, want := range []string{"AVRO", "version 2", "version 1", `"name": "note"`, "BACKWARD",
		// The diff of the two newest versions: the field added.
		"Diff", "+     },\n", "+       \"name\": \"note\",", "        \"name\": \"id\","} {
		if !strings.Contains(text, want) {
			t.Errorf("orders-value page: no %q in\n%s", want, text)
		}
	}
	// The versions the query names, the other way round.
	text = c.open("#/schemas/orders-value?from=2&to=1", "#diff")
	if !strings.Contains(text, "-       \"name\": \"note\",") || strings.Contains(text, "+       \"name\": \"note\"") {
		t.Errorf("the diff from version 2 to 1 does not remove the note field:\n%s", text)
	}
}

func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == name {
				return c.MaybeValue()
			}
		}
	}
	return ""
}
