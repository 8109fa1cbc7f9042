package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/poll"
)

// The suite against Apache Kafka (-chaos.broker=kafka, make chaos-kafka):
// node i's namespace runs a KRaft node in combined mode (broker and
// controller, node id i, a voter of the three-voter quorum) from the jars
// internal/kafkaref fetches, 512 MiB of heap as bench gives Kafka's
// cluster, its PLAINTEXT listener on nodeIP(i):brokerPort and its
// CONTROLLER listener on nodeIP(i):kafkaControllerPort; there is no etcd
// namespace. The workload, the checker, the figures and the phases are
// samsa's; a phase about etcd or about the peers is mapped onto Kafka's
// nodes by kafkaPhases, and one that needs samsa's fault-injecting file
// system does not apply.

var brokerKind = flag.String("chaos.broker", "samsa",
	"what the nodes run: samsa, or kafka (Apache Kafka from internal/kafkaref's jars, three KRaft nodes in combined mode; make chaos-kafka)")

const (
	kafkaControllerPort = 9093
	kafkaHeapMB         = 512
)

// kafkaProps are brokerProps for Kafka. samsa renews a broker's
// registration (its etcd lease) at a third of broker.session.timeout.ms;
// a Kafka broker heartbeats every broker.heartbeat.interval.ms, by
// default 2000, two thirds of the suite's 3000 ms session: it heartbeats
// at a third too. group.initial.rebalance.delay.ms is Kafka's and samsa's
// default, which kafkaref sets to 0 for its single-node tests.
func kafkaProps() map[string]string {
	p := maps.Clone(brokerProps)
	p["broker.heartbeat.interval.ms"] = "1000"
	p["group.initial.rebalance.delay.ms"] = "3000"
	return p
}

// startKafka formats and starts a Kafka node in each node's namespace on
// c.dirs and c.addrs, and waits until every broker is registered.
func (c *cluster) startKafka(t testing.TB, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	libs, err := kafkaref.Libs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	c.version = kafkaref.Version(libs)
	id, err := kafkaref.ClusterID()
	if err != nil {
		t.Fatal(err)
	}
	var ctrls []string
	for i := range c.dirs {
		ctrls = append(ctrls, fmt.Sprintf("%s:%d", nodeIP(i+1), kafkaControllerPort))
	}
	for i, d := range c.dirs {
		props := filepath.Join(dir, fmt.Sprintf("node%d.properties", i+1))
		if err := kafkaref.Prepare(ctx, libs, id, props, kafkaref.ClusterNodeProps(i+1, c.addrs, ctrls, d, kafkaProps())); err != nil {
			t.Fatal(err)
		}
		p := &proc{name: fmt.Sprintf("kafka node %d", i+1), ns: nodeNS(i + 1), dir: dir,
			argv: kafkaref.NodeArgv(libs, kafkaHeapMB, props)}
		c.nodes = append(c.nodes, p)
		p.start(t)
		t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	poll.Eventually(t, 3*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		bs, err := adm.ListBrokers(ctx)
		if err != nil {
			return err
		}
		if len(bs) < len(c.nodes) {
			return fmt.Errorf("%d of %d Kafka brokers registered", len(bs), len(c.nodes))
		}
		return nil
	})
}

// brokers names what the nodes run.
func (c *cluster) brokers() string {
	if c.kafka {
		return "Apache Kafka " + c.version
	}
	return "samsa"
}

// offlineMarks are the lines a node prints when its log directory fails:
// samsa takes it offline; a Kafka node logs it and, its only directory
// also holding the metadata log, halts (ReplicaManager.handleLogDirFailure),
// or its raft thread fails first on the metadata log.
func (c *cluster) offlineMarks() []string {
	if c.kafka {
		return []string{"because the log directory has failed", "Encountered fatal fault"}
	}
	return []string{"log directory offline"}
}

// kafkaPhase is how a phase runs on Kafka: another inject, or why it does
// not apply.
type kafkaPhase struct {
	inject func(s *suite) (string, func())
	na     string
}

// kafkaPhases are the phases that do not run unchanged on Kafka, by name.
// Peers are the other brokers, so a cut from the peers is a cut of the
// broker listener's traffic only (the controllers still reach each other
// and every broker); etcd is the controller quorum, so a cut from etcd is
// a cut of the controller listener's traffic. Every other phase runs as
// it does on samsa: a cut from peers and etcd (the split) is a cut from
// the peers' addresses; the etcd address, unused, drops nothing.
var kafkaPhases = map[string]kafkaPhase{
	"leader cut from peers (DROP)": {inject: func(s *suite) (string, func()) {
		return s.cutPort(s.leader(), brokerPort, false, false, "cut from its peers' broker traffic, not from the controllers")
	}},
	"leader cut from peers (REJECT)": {inject: func(s *suite) (string, func()) {
		return s.cutPort(s.leader(), brokerPort, true, false, "refuses its peers' broker traffic, not the controllers'")
	}},
	"one-way loss leader→peers": {inject: func(s *suite) (string, func()) {
		return s.cutPort(s.leader(), brokerPort, false, true, "loses every broker packet it sends its peers")
	}},
	"leader cut from etcd": {inject: func(s *suite) (string, func()) {
		return s.cutPort(s.leader(), kafkaControllerPort, false, false, "cut from the controller quorum (the controller traffic between it and its peers)")
	}},
	// Every etcd member killed, the brokers running: Kafka's controllers
	// die only with their brokers, so no controller reaches another.
	"etcd killed and restarted": {inject: func(s *suite) (string, func()) {
		for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
			cutPorts(s.t, nodeNS(int(id)), s.peerIPs(id), kafkaControllerPort, false, false)
		}
		return "every controller cut from the others (no quorum), the brokers running", func() {
			for id := 1; id <= len(s.c.nodes); id++ {
				heal(s.t, nodeNS(id))
			}
		}
	}},
	// The etcd leader killed: the quorum leader (the active controller)
	// cut from the other voters; its broker keeps its own connections to
	// the other brokers and the clients.
	"etcd leader lost (one of three members)": {inject: func(s *suite) (string, func()) {
		return s.cutPort(s.quorumLeader(), kafkaControllerPort, false, false, "(the quorum leader) cut from the other voters")
	}},
	"write and fsync errors on the leader (EIO)": {na: "needs samsa's fault-injecting file system (samsa.test.fault.file)"},
	"object store unreachable":                   {na: tieredNA},
	"kill -9 leader during an upload":            {na: tieredNA},
}

// tieredNA is why the tiered storage phases do not apply to Kafka: it
// ships no S3 RemoteStorageManager (Aiven's plugin is a jar of its own).
const tieredNA = "Kafka ships no S3 RemoteStorageManager (Aiven's plugin is a separate jar)"

// adapt is phase ph as it runs on the cluster's brokers, or why it does
// not apply.
func (c *cluster) adapt(ph phase) (phase, string) {
	if !c.kafka {
		return ph, ""
	}
	k, ok := kafkaPhases[ph.name]
	switch {
	case !ok:
		return ph, ""
	case k.na != "":
		return ph, k.na
	}
	ph.inject = k.inject
	return ph, ""
}

// cutPort cuts node id's TCP traffic with its peers on port (theirs and
// its own), as cut does, and says so.
func (s *suite) cutPort(id int32, port int, reject, oneWay bool, what string) (string, func()) {
	cutPorts(s.t, nodeNS(int(id)), s.peerIPs(id), port, reject, oneWay)
	return fmt.Sprintf("node %d %s (port %d)", id, what, port), func() { heal(s.t, nodeNS(int(id))) }
}

// cutPorts drops (or refuses) the TCP traffic between namespace ns and
// each peer that is to or from port on either side, both ways unless
// oneWay (then only what ns sends).
func cutPorts(t testing.TB, ns string, peers []string, port int, reject, oneWay bool) {
	t.Helper()
	target := []string{"-j", "DROP"}
	if reject {
		target = []string{"-j", "REJECT", "--reject-with", "tcp-reset"}
	}
	p := strconv.Itoa(port)
	for _, ip := range peers {
		for _, side := range []string{"--dport", "--sport"} {
			rule := []string{"ip", "netns", "exec", ns, "iptables", "-A", chain, "-p", "tcp", side, p}
			must(t, append(append(rule, "-d", ip), target...)...)
			if !oneWay {
				must(t, append(append(rule, "-s", ip), target...)...)
			}
		}
	}
}

// quorumLeader is the node whose controller leads the KRaft quorum (the
// active controller), from DescribeQuorum: Kafka's Metadata names a
// random broker as the controller.
func (s *suite) quorumLeader() int32 {
	var id int32
	poll.Eventually(s.t, 30*time.Second, func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.addrs...), kgo.DialTimeout(time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return errors.New("DescribeQuorum answered no __cluster_metadata-0")
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		if p.LeaderID < 1 {
			return fmt.Errorf("the quorum has no leader (%d)", p.LeaderID)
		}
		id = p.LeaderID
		return nil
	})
	return id
}

// TestKafkaPhasesNameSuitePhases: every phase kafkaPhases maps is one of
// the suite's, so that a renamed phase does not run its samsa form on
// Kafka unnoticed.
func TestKafkaPhasesNameSuitePhases(t *testing.T) {
	names := map[string]bool{}
	for _, ph := range allPhases {
		names[ph.name] = true
	}
	for name := range kafkaPhases {
		if !names[name] {
			t.Errorf("kafkaPhases maps %q, which is no phase of the suite", name)
		}
	}
}
