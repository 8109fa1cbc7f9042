package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// Kafka Connect standalone with the FileStream connectors, from the class
// path compat/java/connect's build copies to its target/lib (see its pom for
// why that is Connect 4.3.1).
const connectStandalone = "org.apache.kafka.connect.cli.ConnectStandalone"

func connectLib(root string) string {
	return filepath.Join(root, "compat", "java", "connect", "target", "lib")
}

func connectJob(root string) job {
	name := "Kafka Connect standalone " + orUnknown(javaVersion(connectLib(root), "connect-runtime"))
	return goJob(name, func() goScenarios {
		return addSecure(goScenarios{"pipeline": connectPipeline}, connectSecure)
	})
}

// connectPipeline: 100 lines in a file → FileStreamSource → a topic of one
// partition → FileStreamSink → a file holding the same 100 lines in order.
func connectPipeline(ctx context.Context, e *env) error {
	return runConnect(ctx, e, e.bootstrap, e.prefix, nil)
}

// connectSecure is the pipeline over a security scenario's listener: the
// worker's clients (its own, and its tasks' producer., consumer. and
// admin. ones) get the Java client's settings for the scenario, the topic
// and the connectors are named sec-<prefix>-<scenario>-..., and so is the
// sink's group (connect-sec-...), which the matrix principals may read.
func connectSecure(ctx context.Context, e *env, scenario string) error {
	return runConnect(ctx, e, e.sec.listeners[scenario], secTopic(e.prefix, scenario), e.sec.javaClient(scenario))
}

// runConnect runs the pipeline through bootstrap with the clients'
// settings sec, its topic and connectors named <name>-connect, -source and
// -sink.
func runConnect(ctx context.Context, e *env, bootstrap, name string, sec map[string]string) error {
	lib := connectLib(e.root)
	if m, _ := filepath.Glob(filepath.Join(lib, "connect-file-*.jar")); len(m) == 0 {
		return fmt.Errorf("no FileStream connector jar in %s (make java-deps)", lib)
	}
	topic := name + "-connect"
	if err := e.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	dir := filepath.Join(e.tmp, topic)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "line-%d %s\n", i, hex.EncodeToString(recValue(i)))
	}
	if err := os.WriteFile(in, []byte(want.String()), 0o644); err != nil {
		return err
	}
	ports, err := kafkaref.FreePorts(1)
	if err != nil {
		return err
	}
	worker := map[string]string{
		"bootstrap.servers":            bootstrap,
		"key.converter":                "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":              "org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename": filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms":     "1000",
		"listeners":                    "http://127.0.0.1:" + strconv.Itoa(ports[0]),
	}
	for k, v := range sec {
		for _, p := range []string{"", "producer.", "consumer.", "admin."} {
			worker[p+k] = v
		}
	}
	files := map[string]string{
		"worker.properties": props(worker),
		"source.properties": props(map[string]string{
			"name":            name + "-source",
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"tasks.max":       "1",
			"file":            in,
			"topic":           topic,
		}),
		"sink.properties": props(map[string]string{
			"name":            name + "-sink",
			"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
			"tasks.max":       "1",
			"file":            out,
			"topics":          topic,
		}),
	}
	names := []string{"worker.properties", "source.properties", "sink.properties"}
	if sec != nil {
		// A third connector writes to the topic no principal may use.
		files["denied.properties"] = props(map[string]string{
			"name":            name + "-denied",
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"tasks.max":       "1",
			"file":            in,
			"topic":           deniedTopic,
		})
		names = append(names, "denied.properties")
	}
	var args []string
	for _, f := range names {
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte(files[f]), 0o644); err != nil {
			return err
		}
		args = append(args, p)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(cctx, "java", append([]string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(lib, "*"), connectStandalone}, args...)...)
	cmd.Dir = dir
	var log tailBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start Connect: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cancel()
		<-exited
	}()
	deadline := time.After(90 * time.Second)
	for {
		got, _ := os.ReadFile(out)
		if bytes.Equal(got, []byte(want.String())) {
			if sec == nil {
				return nil
			}
			return connectDenied(ctx, ports[0], name+"-denied", exited, &log)
		}
		if len(got) > 0 && !strings.HasPrefix(want.String(), string(got)) {
			return fmt.Errorf("the sink file differs from the source file: %q…", firstLine(got))
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("connect exited (%v): %s", err, log.Tail(5))
		case <-deadline:
			return fmt.Errorf("the sink file holds %d of 100 lines after 90s: %s", bytes.Count(got, []byte("\n")), log.Tail(5))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// connectDenied waits for the task of the connector writing to deniedTopic
// to fail with the producer's authorization error, as the worker's REST
// API reports it.
func connectDenied(ctx context.Context, port int, connector string, exited chan error, log *tailBuffer) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/connectors/%s/status", port, connector)
	deadline := time.After(60 * time.Second)
	last := "no status"
	for {
		var st struct {
			Tasks []struct {
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"tasks"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && len(st.Tasks) > 0 {
				last = st.Tasks[0].State + " " + firstLine([]byte(st.Tasks[0].Trace))
				if st.Tasks[0].State == "FAILED" {
					if authzError.MatchString(st.Tasks[0].Trace) {
						return nil
					}
					return fmt.Errorf("the task writing to %s failed otherwise: %s", deniedTopic, last)
				}
			}
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("connect exited (%v): %s", err, log.Tail(5))
		case <-deadline:
			return fmt.Errorf("the task writing to %s without an ACL has not failed after 60s (%s)", deniedTopic, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// props renders a Java .properties file; the values here need no escaping
// beyond backslashes.
func props(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		b.WriteString(k + "=" + strings.ReplaceAll(m[k], `\`, `\\`) + "\n")
	}
	return b.String()
}
