//go:build docker

// The compose stack for real (make test builds this file with -tags docker,
// after the other tests): a Docker Engine, the image built from the
// Dockerfile, docker-compose.yml brought up, clients on the host.

package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/poll"
)

// TestDockerCompose builds the image FROM scratch, brings the KRaft compose
// file up, produces and consumes from the host through the published ports
// (and registers a schema through one node's schema registry and reads it
// through the others'), kills the broker leading partition 0 with `docker
// compose kill`, keeps producing with acks=all, reads back every
// acknowledged record at the offset it was acknowledged at, and brings the
// stack down with its volumes.
func TestDockerCompose(t *testing.T) {
	start := time.Now()
	ensureDockerd(t)
	compose := composeCommand(t)
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}

	// The image copies the static bin/samsa (no image can be pulled, not
	// even one to build in).
	build := exec.Command("go", "build", "-o", filepath.Join(abs, "bin", "samsa"), "./cmd/samsa")
	build.Dir = abs
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	built := time.Now()

	// The EXTERNAL listeners, the REST proxies and the schema registries,
	// published on free host ports (SAMSA_PORT_n, SAMSA_PROXY_PORT_n,
	// SAMSA_REGISTRY_PORT_n; the file's own 19092, 29092, 39092, 38082 and
	// 38081 lie in the ephemeral range, where another test's connection
	// may hold one).
	var hostBrokers, proxies, registries, portEnv []string
	for i := 1; i <= 3; i++ {
		port, proxyPort, registryPort := freePort(t), freePort(t), freePort(t)
		hostBrokers = append(hostBrokers, "localhost:"+port)
		proxies = append(proxies, "http://localhost:"+proxyPort)
		registries = append(registries, "http://localhost:"+registryPort)
		portEnv = append(portEnv, fmt.Sprintf("SAMSA_PORT_%d=%s", i, port), fmt.Sprintf("SAMSA_PROXY_PORT_%d=%s", i, proxyPort),
			fmt.Sprintf("SAMSA_REGISTRY_PORT_%d=%s", i, registryPort))
	}
	project := fmt.Sprintf("samsadeploy%d", os.Getpid())
	stack := func(timeout time.Duration, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		argv := append(append(compose[1:len(compose):len(compose)], "-p", project, "-f", filepath.Join(abs, "docker-compose.yml")), args...)
		cmd := exec.CommandContext(ctx, compose[0], argv...)
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), portEnv...)
		return cmd.CombinedOutput()
	}
	down := func() error {
		out, err := stack(3*time.Minute, "down", "-v", "--rmi", "local", "--timeout", "5")
		if err != nil {
			return fmt.Errorf("compose down: %v\n%s", err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		if t.Failed() {
			if out, _ := stack(time.Minute, "logs", "--no-color", "--tail", "60"); len(out) > 0 {
				t.Logf("compose logs (etcd's lines left out):\n%s", dropLines(out, "etcd:"))
			}
		}
		if err := down(); err != nil {
			t.Error(err)
		}
	})
	if out, err := stack(5*time.Minute, "up", "-d", "--build"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	upAt := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// MetadataMinAge as the Java client's retry.backoff.ms: kgo's 5 s
	// default would be the failover figure otherwise.
	cl, err := kgo.NewClient(kgo.SeedBrokers(hostBrokers...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	poll.Eventually(t, 2*time.Minute, func() error {
		bs, err := adm.ListBrokers(ctx)
		if err != nil {
			return err
		}
		if len(bs) != 3 {
			return fmt.Errorf("%d brokers registered", len(bs))
		}
		return nil
	})
	served := time.Now()

	// The compose file's defaults: three partitions, three replicas.
	const topic = "compose"
	if _, err := adm.CreateTopic(ctx, -1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var leader0 int32 // partition 0's leader, as last described
	describe := func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		d := td[topic]
		if d.Err != nil {
			return d.Err
		}
		if len(d.Partitions) != 3 {
			return fmt.Errorf("%d partitions", len(d.Partitions))
		}
		for _, p := range d.Partitions {
			if p.Leader < 0 || len(p.Replicas) != 3 || len(p.ISR) != 3 {
				return fmt.Errorf("partition %d: leader %d replicas %v isr %v", p.Partition, p.Leader, p.Replicas, p.ISR)
			}
		}
		leader0 = d.Partitions[0].Leader
		return nil
	}
	poll.Eventually(t, time.Minute, describe)

	acked := map[string][2]int64{} // value -> partition, offset
	produce := func(i int) (time.Duration, error) {
		v := "r" + strconv.Itoa(i)
		began := time.Now()
		r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return time.Since(began), fmt.Errorf("record %s: %w", v, err)
		}
		acked[v] = [2]int64{int64(r.Partition), r.Offset}
		return time.Since(began), nil
	}
	const before, after = 90, 90
	for i := range before {
		if _, err := produce(i); err != nil {
			t.Fatalf("before the kill: %v", err)
		}
	}
	readAll(t, ctx, hostBrokers, acked)
	// Each node's REST proxy, through its published port, lists the topic
	// with its three partitions.
	for _, proxy := range proxies {
		poll.Eventually(t, time.Minute, func() error { return proxyListsTopic(ctx, proxy, topic) })
	}
	registryServesEverywhere(t, ctx, registries)

	// docker compose kill sends SIGKILL to the broker leading partition 0
	// now.
	poll.Eventually(t, time.Minute, describe)
	victim := fmt.Sprintf("samsa-%d", leader0)
	killStart := time.Now()
	if out, err := stack(time.Minute, "kill", victim); err != nil {
		t.Fatalf("compose kill %s: %v\n%s", victim, err, out)
	}
	killedAt := time.Now() // the container is dead once kill returns
	var longest time.Duration
	var firstOn0 time.Duration // from the kill to the first ack on partition 0
	for i := before; i < before+after; i++ {
		took, err := produce(i)
		if err != nil {
			t.Fatalf("after killing %s: %v", victim, err)
		}
		longest = max(longest, took)
		if i%3 == 0 && firstOn0 == 0 {
			firstOn0 = time.Since(killedAt)
		}
	}
	readAll(t, ctx, hostBrokers, acked)
	cl.Close()
	// It stayed dead (SIGKILL's 137; no restart policy brought it back).
	id, err := stack(time.Minute, "ps", "-q", victim)
	if err != nil {
		t.Fatalf("compose ps %s: %v\n%s", victim, err, id)
	}
	state, err := exec.Command("docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}", strings.TrimSpace(string(id))).CombinedOutput()
	if got := strings.TrimSpace(string(state)); err != nil || got != "exited 137 0" {
		t.Errorf("the killed %s: %q %v, want exited 137 0", victim, got, err)
	}

	downAt := time.Now()
	if err := down(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "label=com.docker.compose.project="+project).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("containers left after compose down: %q %v", out, err)
	}
	t.Logf("static build %v; compose up --build %v; three brokers registered %v later; "+
		"%s (leader of partition 0) killed (compose kill took %v): first ack on partition 0 %v after it returned, longest acks=all wait %v; "+
		"%d records acknowledged, all read back; down -v %v; total %v",
		built.Sub(start).Round(time.Millisecond), upAt.Sub(built).Round(time.Millisecond),
		served.Sub(upAt).Round(time.Millisecond), victim, killedAt.Sub(killStart).Round(time.Millisecond), firstOn0.Round(time.Millisecond),
		longest.Round(time.Millisecond), len(acked), time.Since(downAt).Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
}

// proxyListsTopic asks a REST proxy for the topic's partitions (v2's
// GET /topics/{topic}/partitions) and wants three.
func proxyListsTopic(ctx context.Context, proxy, topic string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxy+"/topics/"+topic+"/partitions", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/vnd.kafka.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var parts []struct {
		Partition int32 `json:"partition"`
		Leader    int32 `json:"leader"`
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%s: %s %s", proxy, resp.Status, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(&parts); err != nil {
		return fmt.Errorf("%s: %v", proxy, err)
	}
	if len(parts) != 3 {
		return fmt.Errorf("%s: partitions %+v, want 3", proxy, parts)
	}
	return nil
}

// registryServesEverywhere registers a schema through the first node's
// schema registry (its published port) and reads it, by id and as its
// subject's latest version, through each of the others'.
func registryServesEverywhere(t *testing.T, ctx context.Context, registries []string) {
	t.Helper()
	start := time.Now()
	defer func() {
		t.Logf("schema registry: registered through node 1, read through 2 and 3 in %v", time.Since(start).Round(time.Millisecond))
	}()
	const subject, schema = "compose-value", `{"type":"record","name":"Compose","fields":[{"name":"n","type":"int"}]}`
	first, err := sr.NewClient(sr.URLs(registries[0]))
	if err != nil {
		t.Fatal(err)
	}
	var id int
	poll.Eventually(t, time.Minute, func() error {
		s, err := first.CreateSchema(ctx, subject, sr.Schema{Schema: schema})
		id = s.ID
		return err
	})
	for _, url := range registries[1:] {
		cl, err := sr.NewClient(sr.URLs(url))
		if err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, time.Minute, func() error {
			byID, err := cl.SchemaByID(ctx, id)
			if err != nil {
				return fmt.Errorf("%s: schema %d: %w", url, id, err)
			}
			latest, err := cl.SchemaByVersion(ctx, subject, -1)
			if err != nil {
				return fmt.Errorf("%s: %s latest: %w", url, subject, err)
			}
			if byID.Schema != schema || latest.ID != id || latest.Version != 1 {
				return fmt.Errorf("%s: schema %d %q, %s latest %+v; want %q as version 1", url, id, byID.Schema, subject, latest, schema)
			}
			return nil
		})
	}
}

// readAll consumes the topic from the start with a new client until every
// acknowledged record was read, each at the partition and offset it was
// acknowledged at and only once.
func readAll(t *testing.T, ctx context.Context, hostBrokers []string, acked map[string][2]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(hostBrokers...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ConsumeTopics("compose"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	poll.Eventually(t, 2*time.Minute, func() error {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		fs := cl.PollFetches(fctx)
		var errs []error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			want, ok := acked[v]
			switch {
			case !ok:
				t.Errorf("read %s at %d/%d, never acknowledged", v, r.Partition, r.Offset)
			case seen[v]:
				t.Errorf("read %s twice", v)
			case want != [2]int64{int64(r.Partition), r.Offset}:
				t.Errorf("read %s at %d/%d, acknowledged at %d/%d", v, r.Partition, r.Offset, want[0], want[1])
			}
			seen[v] = true
		})
		if len(seen) < len(acked) {
			return fmt.Errorf("read %d of %d acknowledged records (fetch errors %v)", len(seen), len(acked), errs)
		}
		return nil
	})
}

// ensureDockerd uses the Docker Engine that answers on its socket, or
// starts dockerd for the test and stops it afterwards. It starts it with
// --iptables=false: the daemon then leaves the host's firewall alone (its
// FORWARD DROP policy would cut internal/chaos's bridge), published ports
// go through docker-proxy and the compose network is one bridge that needs
// no NAT.
func ensureDockerd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatal("no docker client on PATH: make docker-deps installs Debian's docker.io")
	}
	if dockerAnswers() == nil {
		return
	}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		t.Fatal("no Docker Engine runs and no dockerd on PATH: make docker-deps installs Debian's docker.io")
	}
	logPath := filepath.Join(t.TempDir(), "dockerd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--iptables=false", "--ip6tables=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting dockerd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		defer logf.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("dockerd did not stop within a minute of SIGTERM")
		}
	})
	poll.Eventually(t, time.Minute, func() error {
		select {
		case err := <-exited:
			exited <- err
			log, _ := os.ReadFile(logPath)
			t.Fatalf("dockerd exited: %v\n%s", err, log)
		default:
		}
		return dockerAnswers()
	})
}

func dockerAnswers() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker version: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// composeCommand is `docker compose` (v2) where the plugin is installed,
// else Debian's docker-compose (v1.29), which reads the file as well.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	t.Fatal("neither `docker compose` nor docker-compose: make docker-deps installs Debian's docker-compose")
	return nil
}

// freePort is a port of the host that nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func dropLines(out []byte, sub string) string {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, sub) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
