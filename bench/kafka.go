package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Apache Kafka is resolved from Maven with bench/kafka/pom.xml (the broker
// jar kafka_2.13 and its runtime libraries, plus a log4j2 binding) into
// <cache>/kafka-libs, and run in KRaft combined mode (broker+controller, one
// node) straight from the class path: kafka.tools.StorageTool formats the
// log dir, kafka.Kafka serves.

const kafkaLog4j2 = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="STDERR" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="WARN"><AppenderRef ref="STDERR"/></Root>
  </Loggers>
</Configuration>
`

// kafkaJVMOpts are the heap and GC settings of Kafka's own start scripts
// (kafka-server-start.sh and kafka-run-class.sh).
var kafkaJVMOpts = []string{
	"-Xmx1g", "-Xms1g",
	"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-Djava.awt.headless=true",
}

// kafkaLibs returns the directory holding the Kafka broker's jars, running
// Maven to fill it when it does not hold kafka_2.13 yet.
func kafkaLibs(ctx context.Context, root, cacheDir string) (string, error) {
	libs := filepath.Join(cacheDir, "kafka-libs")
	if m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-*.jar")); len(m) > 0 {
		return libs, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("mvn not found (needed once to fetch the Kafka broker jars): %w", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("java not found: %w", err)
	}
	tmp := libs + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B",
		"-f", filepath.Join(root, "bench", "kafka", "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime",
		"-DoutputDirectory="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mvn dependency:copy-dependencies: %w\n%s", err, tail(out, 20))
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "kafka_2.13-*.jar")); len(m) == 0 {
		return "", fmt.Errorf("mvn succeeded but %s holds no kafka_2.13 jar", tmp)
	}
	if err := os.RemoveAll(libs); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, libs); err != nil {
		return "", err
	}
	return libs, nil
}

// kafkaVersion names the broker jar found in libs, e.g. "4.4.0".
func kafkaVersion(libs string) string {
	m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-*.jar"))
	if len(m) == 0 {
		return "?"
	}
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "kafka_2.13-"), ".jar")
}

// startKafka formats a fresh KRaft log dir under dir and starts one
// combined-mode node on free loopback ports.
func startKafka(ctx context.Context, libs, dir string) (*brokerProc, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctrl := fmt.Sprintf("127.0.0.1:%d", ports[1])
	logDir := filepath.Join(dir, "data")
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.bootstrap.servers=" + ctrl,
		"listeners=PLAINTEXT://" + addr + ",CONTROLLER://" + ctrl,
		"advertised.listeners=PLAINTEXT://" + addr,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs=" + logDir,
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"",
	}, "\n")
	propsPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(dir, "log4j2.xml")
	if err := os.WriteFile(log4j, []byte(kafkaLog4j2), 0o644); err != nil {
		return nil, err
	}
	cp := filepath.Join(libs, "*")
	common := []string{"-Dlog4j2.configurationFile=" + log4j, "-cp", cp}

	clusterID, err := kraftClusterID()
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	format := exec.CommandContext(fctx, "java", append(append([]string{"-Xmx256m"}, common...),
		"kafka.tools.StorageTool", "format", "-t", clusterID, "-c", propsPath, "--standalone")...)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka storage format: %w\n%s", err, tail(out, 20))
	}

	args := append(append(append([]string{}, kafkaJVMOpts...), common...), "kafka.Kafka", propsPath)
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	return startProc("kafka", addr, filepath.Join(dir, "kafka.log"), cmd)
}

// kraftClusterID returns a random cluster id in the form kafka-storage
// random-uuid prints: 16 random bytes, URL-safe base64 without padding.
func kraftClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// tail returns the last n lines of out, indented.
func tail(out []byte, n int) string {
	lines := strings.Split(string(bytes.TrimRight(out, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
