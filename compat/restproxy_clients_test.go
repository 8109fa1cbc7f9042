package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// proxyRecords is how many records go each way between the proxy and
// each client.
const proxyRecords = 10

// proxyClientRun is one client of the matrix beside the proxy: it reads
// proxyRecords records of from (produced over HTTP) from the start of
// partition 0, returning their keys and values, then produces
// proxyRecords records to to, keyed name-i, valued {"from":name,"i":i}.
type proxyClientRun func(ctx context.Context, addr, from, to, name string) ([][2]string, error)

// proxyValue is the value of record i a client produces.
func proxyValue(name string, i int) string { return fmt.Sprintf(`{"from":%q,"i":%d}`, name, i) }

// TestRESTProxyMatrixClients: records produced over HTTP (json) are read
// byte-exact by every client of the matrix (Kafka's Java console
// consumer, confluent-kafka, kafkajs, kafka-go, sarama, franz-go), and
// the records each of them produces are read over HTTP by a consumer
// instance; one topic each way per client, the clients at once.
func TestRESTProxyMatrixClients(t *testing.T) {
	b, url := startProxyBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 2*time.Minute)
	clients := map[string]proxyClientRun{
		"franz-go": franzProxyClient, "sarama": saramaProxyClient, "kafka-go": kafkaGoProxyClient,
		"java-console": javaConsoleProxyClient(t, ctx, b.Addr()),
		"confluent-kafka": func(ctx context.Context, addr, from, to, name string) ([][2]string, error) {
			return externalProxyClient(exec.CommandContext(ctx, venvPython(t, root), filepath.Join(root, "compat", "python", "rest_proxy_client.py"),
				addr, from, to, fmt.Sprint(proxyRecords), name))
		},
		"kafkajs": func(ctx context.Context, addr, from, to, name string) ([][2]string, error) {
			cmd := exec.CommandContext(ctx, "node", "rest_proxy_client.js", addr, from, to, fmt.Sprint(proxyRecords), name)
			cmd.Dir = filepath.Join(root, "compat", "node")
			return externalProxyClient(cmd)
		},
	}
	adm := newAdmin(t, b.Addr())
	for name := range clients {
		createTopic(t, adm, "from-http-"+name, 1, nil)
		createTopic(t, adm, "to-http-"+name, 1, nil)
	}
	var records []string
	for i := range proxyRecords {
		records = append(records, fmt.Sprintf(`{"key":"k%d","value":{"i":%d,"via":"http"}}`, i, i))
	}
	for name := range clients {
		status, body, err := proxyCall(ctx, "POST", url+"/topics/from-http-"+name, "application/vnd.kafka.json.v2+json", `{"records":[`+strings.Join(records, ",")+`]}`)
		if err != nil || status != 200 {
			t.Fatalf("produce over HTTP: %d %s %v", status, body, err)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for name, run := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if err := proxyClientRoundTrip(ctx, url, b.Addr(), name, run); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			t.Logf("%s: %v", name, time.Since(start).Round(time.Millisecond))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// proxyClientRoundTrip runs one client and checks both ways: what it read
// of the records produced over HTTP, and what a consumer instance reads
// of its records.
func proxyClientRoundTrip(ctx context.Context, url, addr, name string, run proxyClientRun) error {
	got, err := run(ctx, addr, "from-http-"+name, "to-http-"+name, name)
	if err != nil {
		return err
	}
	for i, kv := range got {
		if want := [2]string{fmt.Sprintf(`"k%d"`, i), fmt.Sprintf(`{"i":%d,"via":"http"}`, i)}; kv != want {
			return fmt.Errorf("read record %d as %q, want %q", i, kv, want)
		}
	}
	if len(got) != proxyRecords {
		return fmt.Errorf("read %d records, want %d", len(got), proxyRecords)
	}
	const v2 = "application/vnd.kafka.v2+json"
	inst := url + "/consumers/http-" + name + "/instances/one"
	if status, body, err := proxyCall(ctx, "POST", url+"/consumers/http-"+name, v2, `{"name":"one","format":"binary","auto.offset.reset":"earliest"}`); err != nil || status != 200 {
		return fmt.Errorf("create instance: %d %s %v", status, body, err)
	}
	if status, body, err := proxyCall(ctx, "POST", inst+"/assignments", v2, `{"partitions":[{"topic":"to-http-`+name+`","partition":0}]}`); err != nil || status != 204 {
		return fmt.Errorf("assign: %d %s %v", status, body, err)
	}
	var recs []struct {
		Key, Value []byte // base64 in JSON
		Offset     int64
	}
	for len(recs) < proxyRecords {
		status, body, err := proxyCall(ctx, "GET", inst+"/records?timeout=200", "", "")
		if err != nil || status != 200 {
			return fmt.Errorf("records: %d %s %v", status, body, err)
		}
		var more []struct {
			Key, Value []byte
			Offset     int64
		}
		if err := json.Unmarshal(body, &more); err != nil {
			return fmt.Errorf("records %s: %v", body, err)
		}
		recs = append(recs, more...)
	}
	for i, r := range recs {
		if string(r.Key) != fmt.Sprintf("%s-%d", name, i) || string(r.Value) != proxyValue(name, i) || r.Offset != int64(i) {
			return fmt.Errorf("over HTTP, record %d: key %q value %q offset %d", i, r.Key, r.Value, r.Offset)
		}
	}
	_, _, err = proxyCall(ctx, "DELETE", inst, v2, "")
	return err
}

// proxyCall makes one request of the proxy (Accept: binary records, or
// v2) and returns the answer's status and body.
func proxyCall(ctx context.Context, method, url, ctype, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/vnd.kafka.binary.v2+json, application/vnd.kafka.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// externalProxyClient runs a client program that prints what it read as
// JSON, [[key, value], ...], on its last line.
func externalProxyClient(cmd *exec.Cmd) ([][2]string, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // librdkafka's logs
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %w\n%s%s", cmd.Args, err, out, kafkaref.Tail(stderr.Bytes(), 15))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got [][2]string
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		return nil, fmt.Errorf("%v printed %s: %w", cmd.Args, out, err)
	}
	return got, nil
}

// javaConsoleProxyClient is Kafka 4.4's console consumer (partition 0
// from the earliest offset, keys printed) and console producer (keys
// parsed), the two JVMs at once.
func javaConsoleProxyClient(t *testing.T, ctx context.Context, addr string) proxyClientRun {
	tool := kafkaToolIn(t, ctx, addr, t.TempDir())
	return func(ctx context.Context, addr, from, to, name string) ([][2]string, error) {
		var lines []string
		for i := range proxyRecords {
			lines = append(lines, fmt.Sprintf("%s-%d\t%s", name, i, proxyValue(name, i)))
		}
		produced := make(chan error, 1)
		go func() {
			_, err := tool(strings.Join(lines, "\n")+"\n", "org.apache.kafka.tools.ConsoleProducer", "--topic", to,
				"--reader-property", "parse.key=true", "--reader-property", "key.separator=\t")
			produced <- err
		}()
		out, err := tool("", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--topic", from, "--partition", "0", "--offset", "earliest",
			"--max-messages", fmt.Sprint(proxyRecords), "--timeout-ms", "60000",
			"--formatter-property", "print.key=true", "--formatter-property", "key.separator=\t")
		err = errors.Join(err, <-produced)
		if err != nil {
			return nil, err
		}
		var got [][2]string
		for _, l := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(l, "\t"); ok {
				got = append(got, [2]string{k, v})
			}
		}
		return got, nil
	}
}

func franzProxyClient(ctx context.Context, addr, from, to, name string) ([][2]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{from: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var got [][2]string
	for len(got) < proxyRecords {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return got, err
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, [2]string{string(r.Key), string(r.Value)}) })
	}
	var recs []*kgo.Record
	for i := range proxyRecords {
		recs = append(recs, &kgo.Record{Topic: to, Key: fmt.Appendf(nil, "%s-%d", name, i), Value: []byte(proxyValue(name, i))})
	}
	return got, cl.ProduceSync(ctx, recs...).FirstErr()
}

func saramaProxyClient(ctx context.Context, addr, from, to, name string) ([][2]string, error) {
	cfg := admSaramaConfig(sarama.DefaultVersion, sarama.CompressionNone)
	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(from, 0, sarama.OffsetOldest)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	var got [][2]string
	for len(got) < proxyRecords {
		select {
		case m := <-pc.Messages():
			got = append(got, [2]string{string(m.Key), string(m.Value)})
		case err := <-pc.Errors():
			return got, err
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		return got, err
	}
	defer producer.Close()
	var msgs []*sarama.ProducerMessage
	for i := range proxyRecords {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: to, Key: sarama.StringEncoder(fmt.Sprintf("%s-%d", name, i)), Value: sarama.StringEncoder(proxyValue(name, i))})
	}
	return got, producer.SendMessages(msgs)
}

func kafkaGoProxyClient(ctx context.Context, addr, from, to, name string) ([][2]string, error) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: from, Partition: 0, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	var got [][2]string
	for len(got) < proxyRecords {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return got, err
		}
		got = append(got, [2]string{string(m.Key), string(m.Value)})
	}
	tr := &kafka.Transport{} // not the shared DefaultTransport, whose connections outlive the test
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: to, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: tr}
	defer w.Close()
	var msgs []kafka.Message
	for i := range proxyRecords {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "%s-%d", name, i), Value: []byte(proxyValue(name, i))})
	}
	return got, w.WriteMessages(ctx, msgs...)
}
