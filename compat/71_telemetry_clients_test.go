package compat

// KIP-714 with real clients: a subscription set with Kafka 4.4's
// kafka-client-metrics.sh, then the Java client 4.4 (Kafka's own
// producer-perf-test and console consumer, enable.metrics.push on by
// default) and librdkafka (confluent-kafka) push their metrics, which
// show on /metrics and on the console's Clients page (its /api/clients,
// then the page itself in headless Chromium).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/clientmetrics"
	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// background runs cmd until the test ends (or it exits), keeping the tail
// of its output for a failure's message.
func background(t *testing.T, cmd *exec.Cmd, cancel context.CancelFunc) func() string {
	t.Helper()
	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if out.Len() > 1<<20 {
			out.Reset()
		}
		return out.Write(p)
	})
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return kafkaref.Tail(out.Bytes(), 15)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// pushedMetrics waits until every client id in want has pushed a series
// whose name contains each of its parts, with a history (the Clients
// page plots it), and /metrics shows it with the instance's labels; it
// returns the clients as /api/clients lists them.
func pushedMetrics(t *testing.T, httpAddr, software string, want map[string][]string, logs ...func() string) []clientmetrics.ClientView {
	t.Helper()
	var clients []clientmetrics.ClientView
	defer func() {
		if !t.Failed() {
			return
		}
		var names []string
		for _, c := range clients {
			for _, s := range c.Series {
				names = append(names, c.ClientID+" ("+c.SoftwareName+"): "+s.Name)
			}
		}
		t.Logf("series pushed:\n  %s", strings.Join(names, "\n  "))
		for _, l := range logs {
			t.Logf("client output:\n%s", l())
		}
	}()
	var last time.Time
	lastErr := fmt.Errorf("not asked yet")
	testutil.Eventually(t, 3*time.Minute, func() error {
		if time.Since(last) < 250*time.Millisecond { // scrape four times a second, not a hundred
			return lastErr
		}
		last = time.Now()
		lastErr = func() error {
			resp, err := http.Get("http://" + httpAddr + "/api/clients")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			clients = nil
			if err := json.NewDecoder(resp.Body).Decode(&clients); err != nil {
				return err
			}
			text := scrapeText(httpAddr)
			for id, parts := range want {
				for _, part := range parts {
					if err := hasSeries(clients, text, id, software, part); err != nil {
						return err
					}
				}
			}
			return nil
		}()
		return lastErr
	})
	return clients
}

func hasSeries(clients []clientmetrics.ClientView, metricsText, clientID, software, part string) error {
	for _, c := range clients {
		if c.ClientID != clientID {
			continue
		}
		if c.SoftwareName != software {
			return fmt.Errorf("%s: software %q, want %q", clientID, c.SoftwareName, software)
		}
		for _, s := range c.Series {
			if !strings.Contains(s.Name, part) || len(s.History) == 0 {
				continue
			}
			prom := strings.NewReplacer(".", "_", "-", "_").Replace(s.Name)
			label := fmt.Sprintf(`client_id=%q,client_instance_id=%q,client_software_name=%q`, clientID, c.InstanceID, software)
			for _, line := range strings.Split(metricsText, "\n") {
				if strings.HasPrefix(line, prom+"{") && strings.Contains(line, label) {
					return nil
				}
			}
			return fmt.Errorf("%s: %s pushed, not on /metrics with %s", clientID, s.Name, label)
		}
		return fmt.Errorf("%s: no %s series with a history yet", clientID, part)
	}
	return fmt.Errorf("%s has pushed nothing yet", clientID)
}

func scrapeText(httpAddr string) string {
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestClientMetricsJava: kafka-client-metrics.sh (Kafka 4.4) sets,
// describes, lists and deletes a subscription; the Java client 4.4
// pushes its producer and consumer metrics as it asks.
func TestClientMetricsJava(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	ctx := testCtx(t, 5*time.Minute)
	tool := func(args ...string) string {
		return runKafkaTool(t, ctx, "", "org.apache.kafka.tools.ClientMetricsCommand", append([]string{"--bootstrap-server", n.Addr()}, args...)...)
	}
	if out := tool("--alter", "--name", "java-clients", "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.",
		"--interval", "500", "--match", "client_software_name=apache-kafka-java"); !strings.Contains(out, "Altered client metrics config for java-clients.") {
		t.Fatalf("kafka-client-metrics --alter:\n%s", out)
	}
	out := tool("--describe", "--name", "java-clients")
	for _, want := range []string{"Client metrics configs for java-clients are:", "interval.ms=500",
		"metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.", "match=client_software_name=apache-kafka-java"} {
		if !strings.Contains(out, want) {
			t.Errorf("kafka-client-metrics --describe: no %q in\n%s", want, out)
		}
	}
	if out := tool("--list"); strings.TrimSpace(out) != "java-clients" {
		t.Errorf("kafka-client-metrics --list:\n%s", out)
	}

	adm, _ := admAdmin(t, n.Addr())
	admCreate(t, adm, "java-metrics", 1, 1, nil)
	libs := kafkaLibs(t, ctx)
	pctx, pcancel := context.WithCancel(ctx)
	producer := background(t, kafkaJava(pctx, libs, "org.apache.kafka.tools.ProducerPerformance", "--topic", "java-metrics",
		"--num-records", "100000000", "--record-size", "100", "--throughput", "200",
		"--producer-props", "bootstrap.servers="+n.Addr(), "client.id=java-producer"), pcancel)
	cctx, ccancel := context.WithCancel(ctx)
	consumer := background(t, kafkaJava(cctx, libs, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", n.Addr(),
		"--topic", "java-metrics", "--group", "java-group", "--consumer-property", "client.id=java-consumer"), ccancel)
	pushedMetrics(t, n.HTTPAddr(), "apache-kafka-java", map[string][]string{
		"java-producer": {"org.apache.kafka.producer.", "request.latency", "record.send.rate"},
		"java-consumer": {"org.apache.kafka.consumer.", "records.lag"},
	}, producer, consumer)
	clientsPageShows(t, n.HTTPAddr(), "java-producer", "java-consumer")

	tool("--delete", "--name", "java-clients")
	if out := tool("--list"); strings.TrimSpace(out) != "" {
		t.Errorf("kafka-client-metrics --list after --delete:\n%s", out)
	}
}

// TestClientMetricsLibrdkafka: librdkafka's producer and consumer push
// the metrics a subscription asks of them.
func TestClientMetricsLibrdkafka(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	ctx := testCtx(t, 5*time.Minute)
	adm, cl := admAdmin(t, n.Addr())
	if r, err := testutil.SubscribeClientMetrics("librdkafka", "metrics", "org.apache.kafka.", "interval.ms", "500",
		"match", "client_software_name=confluent-kafka-python").RequestWith(ctx, cl); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("subscribing: %v %+v", err, r)
	}
	admCreate(t, adm, "rdkafka-metrics", 1, 1, nil)
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	clients := background(t, exec.CommandContext(pctx, venvPython(t, root), filepath.Join(root, "compat", "python", "telemetry.py"),
		n.Addr(), "rdkafka-metrics", "240"), cancel)
	pushedMetrics(t, n.HTTPAddr(), "confluent-kafka-python", map[string][]string{
		"rdkafka-producer": {"org.apache.kafka.producer.", "request.latency"},
		"rdkafka-consumer": {"org.apache.kafka.consumer."},
	}, clients)
	clientsPageShows(t, n.HTTPAddr(), "rdkafka-producer", "rdkafka-consumer")
}

// clientsPageShows opens the console's Clients page in headless Chromium
// (Debian's package; make chromium installs it) and waits until it shows
// a card with a plot for each of the client ids.
func clientsPageShows(t *testing.T, httpAddr string, clientIDs ...string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium on PATH: run make chromium (Debian's chromium package)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+httpAddr+"/#/clients")); err != nil {
		t.Fatal(err)
	}
	ids, _ := json.Marshal(clientIDs)
	ready := fmt.Sprintf(`%s.every(id => [...document.querySelectorAll(".client")].some(c =>
		c.querySelector("h2").textContent.startsWith(id + " ") && c.querySelector("svg.plot") !== null))`, ids)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#view")))
		t.Fatalf("Clients page: waiting for %s with plots: %v\npage:\n%s", ids, err, text)
	}
}

// TestClientMetricsSubscriptionsEveryBroker: a subscription set through
// one broker of a cluster is what every broker gives its clients (etcd's
// watch brings it), and its deletion through another reaches the first.
func TestClientMetricsSubscriptionsEveryBroker(t *testing.T) {
	t.Parallel()
	cl := testutil.StartCluster(t, 2, nil)
	one, two := telemetryConn(t, cl.Nodes[0].Addr(), "samsa-compat"), telemetryConn(t, cl.Nodes[1].Addr(), "samsa-compat")
	if r := one.roundTrip(testutil.SubscribeClientMetrics("everyone", "metrics", "org.apache.kafka.", "interval.ms", "1000"), 1).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("subscribing through broker 1: %+v", r.Resources[0])
	}
	subscribed := func(c *admConn, want ...string) func() error {
		return func() error {
			r := c.roundTrip(kmsg.NewPtrGetTelemetrySubscriptionsRequest(), 0).(*kmsg.GetTelemetrySubscriptionsResponse)
			if r.ErrorCode != 0 || !slices.Equal(r.RequestedMetrics, want) {
				return fmt.Errorf("GetTelemetrySubscriptions: error %d, metrics %v, want %v", r.ErrorCode, r.RequestedMetrics, want)
			}
			return nil
		}
	}
	testutil.Eventually(t, 20*time.Second, subscribed(two, "org.apache.kafka."))
	del := testutil.SubscribeClientMetrics("everyone")
	for _, name := range []string{"metrics", "interval.ms"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = name, kmsg.IncrementalAlterConfigOpDelete
		del.Resources[0].Configs = append(del.Resources[0].Configs, c)
	}
	if r := two.roundTrip(del, 1).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("deleting through broker 2: %+v", r.Resources[0])
	}
	testutil.Eventually(t, 20*time.Second, subscribed(one))
}
