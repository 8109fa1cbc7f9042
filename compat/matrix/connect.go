package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
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
	return goJob(name, func() goScenarios { return goScenarios{"pipeline": connectPipeline} })
}

// connectPipeline: 100 lines in a file → FileStreamSource → a topic of one
// partition → FileStreamSink → a file holding the same 100 lines in order.
func connectPipeline(ctx context.Context, e *env) error {
	lib := connectLib(e.root)
	if m, _ := filepath.Glob(filepath.Join(lib, "connect-file-*.jar")); len(m) == 0 {
		return fmt.Errorf("no FileStream connector jar in %s (make java-deps)", lib)
	}
	topic := e.prefix + "-connect"
	if err := e.createTopic(ctx, topic, 1, nil); err != nil {
		return err
	}
	dir := filepath.Join(e.tmp, "connect")
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
	files := map[string]string{
		"worker.properties": props(map[string]string{
			"bootstrap.servers":            e.bootstrap,
			"key.converter":                "org.apache.kafka.connect.storage.StringConverter",
			"value.converter":              "org.apache.kafka.connect.storage.StringConverter",
			"offset.storage.file.filename": filepath.Join(dir, "offsets"),
			"offset.flush.interval.ms":     "1000",
			"listeners":                    "http://127.0.0.1:" + strconv.Itoa(ports[0]),
		}),
		"source.properties": props(map[string]string{
			"name":            e.prefix + "-source",
			"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
			"tasks.max":       "1",
			"file":            in,
			"topic":           topic,
		}),
		"sink.properties": props(map[string]string{
			"name":            e.prefix + "-sink",
			"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
			"tasks.max":       "1",
			"file":            out,
			"topics":          topic,
		}),
	}
	var args []string
	for _, f := range []string{"worker.properties", "source.properties", "sink.properties"} {
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
			return nil
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
