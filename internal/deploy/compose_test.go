package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/samsa-io/samsa/internal/config"
)

const root = "../.."

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(abs, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  abs,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(abs, "docker-compose.yml"), Content: data}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("samsa", true) })
	if err != nil {
		t.Fatalf("compose-go cannot load docker-compose.yml: %v", err)
	}
	return p
}

// The compose file is a Kafka 4 KRaft file: three samsa brokers built from
// the repository's Dockerfile, each both broker and controller, each
// publishing its own host port, and configured through KAFKA_* variables
// that samsa's configuration accepts as the cluster needs them: distinct
// node ids, the three voters on their CONTROLLER listeners (the etcd
// cluster: no etcd service), listeners inside and outside the compose
// network, three replicas with two in sync.
func TestComposeCluster(t *testing.T) {
	p := loadCompose(t)
	names := slices.Sorted(slices.Values(p.ServiceNames()))
	if want := []string{"samsa-1", "samsa-2", "samsa-3"}; !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}

	seenIDs := map[int32]string{}
	seenVolumes := map[string]string{}
	for i, name := range []string{"samsa-1", "samsa-2", "samsa-3"} {
		s := p.Services[name]
		hostPort := fmt.Sprintf("%d9092", i+1)
		t.Run(name, func(t *testing.T) {
			if s.Build == nil {
				t.Fatal("not built from the Dockerfile")
			}
			abs, _ := filepath.Abs(root)
			if s.Build.Context != abs || (s.Build.Dockerfile != "" && s.Build.Dockerfile != "Dockerfile") {
				t.Errorf("build %s %s, want the repository root and its Dockerfile", s.Build.Context, s.Build.Dockerfile)
			}
			if len(s.DependsOn) != 0 {
				t.Errorf("depends on %v: the nodes start together and wait for a majority", s.DependsOn)
			}
			proxyPort, registryPort := fmt.Sprintf("%d8082", i+1), fmt.Sprintf("%d8081", i+1)
			if len(s.Ports) != 3 || s.Ports[0].Published != hostPort || s.Ports[0].Target != uint32(i+1)*10000+9092 ||
				s.Ports[1].Published != proxyPort || s.Ports[1].Target != 8082 ||
				s.Ports[2].Published != registryPort || s.Ports[2].Target != 8081 {
				t.Errorf("ports %+v, want %s:%s, the REST proxy's %s:8082 and the schema registry's %s:8081",
					s.Ports, hostPort, hostPort, proxyPort, registryPort)
			}
			// The broker's health check runs the binary itself against
			// the in-network listener (the image has no shell).
			if hc := s.HealthCheck; hc == nil || hc.Disable ||
				!slices.Equal(hc.Test[:min(len(hc.Test), 5)], []string{"CMD", "/samsa", "healthcheck", "--bootstrap-server", "127.0.0.1:9092"}) ||
				hc.Interval == nil || time.Duration(*hc.Interval) <= 0 || hc.Retries == nil || *hc.Retries == 0 {
				t.Errorf("health check %+v, want /samsa healthcheck against 127.0.0.1:9092 with an interval and retries", hc)
			}
			if s.StopSignal != "SIGTERM" {
				t.Errorf("stop signal %q", s.StopSignal)
			}
			for _, v := range s.Volumes {
				if other, ok := seenVolumes[v.Source]; ok {
					t.Errorf("volume %s shared with %s", v.Source, other)
				}
				seenVolumes[v.Source] = name
			}

			// samsa reads the environment as the apache/kafka image does;
			// an unknown or malformed property would stop it.
			var env []string
			for k, v := range s.Environment {
				if v != nil {
					env = append(env, k+"="+*v)
				}
			}
			props, err := config.Load("", nil, env)
			if err != nil {
				t.Fatalf("samsa refuses the environment: %v", err)
			}
			id := props.NodeID()
			if id != int32(i+1) {
				t.Errorf("node.id %d, want %d", id, i+1)
			}
			if other, ok := seenIDs[id]; ok {
				t.Errorf("node.id %d also used by %s", id, other)
			}
			seenIDs[id] = name
			if eps := props.List("etcd.endpoints"); len(eps) != 0 {
				t.Errorf("etcd.endpoints %v, want none (the KRaft quorum)", eps)
			}
			q, ok := props.Quorum()
			if !ok || !q.Controller || q.Listener.Name != "CONTROLLER" || q.Listener.Port != 9093 {
				t.Errorf("quorum %+v %v, want a controller on CONTROLLER :9093", q, ok)
			}
			var voters []string
			for _, v := range q.Voters {
				voters = append(voters, fmt.Sprintf("%d@%s", v.ID, v.Addr()))
			}
			if want := []string{"1@samsa-1:9093", "2@samsa-2:9093", "3@samsa-3:9093"}; !slices.Equal(voters, want) {
				t.Errorf("voters %v, want %v", voters, want)
			}
			lns, err := props.Listeners()
			if err != nil {
				t.Fatal(err)
			}
			adv, err := props.AdvertisedListeners()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range lns {
				got = append(got, fmt.Sprintf("%s %s:%d", l.Name, l.Host, l.Port))
			}
			for _, l := range adv {
				got = append(got, fmt.Sprintf("advertised %s %s:%d", l.Name, l.Host, l.Port))
			}
			want := []string{
				"PLAINTEXT 0.0.0.0:9092", "EXTERNAL 0.0.0.0:" + hostPort,
				"advertised PLAINTEXT " + name + ":9092", "advertised EXTERNAL localhost:" + hostPort,
			}
			if !slices.Equal(got, want) {
				t.Errorf("listeners %q, want %q", got, want)
			}
			for k, want := range map[string]string{
				"default.replication.factor":               "3",
				"min.insync.replicas":                      "2",
				"offsets.topic.replication.factor":         "3",
				"inter.broker.listener.name":               "PLAINTEXT",
				"log.dirs":                                 "/var/lib/samsa/data",
				"transaction.state.log.min.isr":            "2",
				"transaction.state.log.replication.factor": "3",
				"samsa.http.proxy.listener":                "0.0.0.0:8082",
				"samsa.schema.registry.listener":           "0.0.0.0:8081",
			} {
				if got := props.String(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// The Dockerfile copies the static bin/samsa into an image from scratch
// and starts `samsa serve` with its data in the volume.
func TestDockerfileFromScratch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var instr []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			instr = append(instr, line)
		}
	}
	for _, want := range []string{
		"FROM scratch",
		"COPY bin/samsa /samsa",
		`ENTRYPOINT ["/samsa"]`,
		`CMD ["serve"]`,
		"VOLUME /var/lib/samsa/data",
		"STOPSIGNAL SIGTERM",
	} {
		if !slices.Contains(instr, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(instr), func(s string) bool { return !strings.HasPrefix(s, "FROM ") })); n != 1 {
		t.Errorf("%d FROM lines, want one stage (scratch)", n)
	}
}
