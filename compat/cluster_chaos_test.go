package compat

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/internal/workload"
)

var (
	chaosDuration = flag.Duration("chaos.duration", 60*time.Second, "how long TestChaos injects faults (make test runs the default; try 10m)")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "TestChaos's random seed; 0 picks one (the test logs it)")
)

// chaosFault injects one fault and returns what it did and how to heal it.
type chaosFault struct {
	name  string
	apply func(x *chaos) (desc string, heal func())
}

// chaos is the state of one TestChaos run.
type chaos struct {
	t     *testing.T
	c     *testutil.FaultCluster
	rng   *rand.Rand
	topic string
	parts int32
}

// node picks a node at random.
func (x *chaos) node() int32 { return int32(x.rng.IntN(len(x.c.Nodes)) + 1) }

// leader is the leader of a random partition, or a random node when no
// running node can say.
func (x *chaos) leader() int32 {
	p := int32(x.rng.IntN(int(x.parts)))
	if leaders, err := partitionLeaders(x.t, x.c, x.topic); err == nil && leaders[p] > 0 {
		return leaders[p]
	}
	return x.node()
}

// follower is a follower of a random partition.
func (x *chaos) follower() int32 {
	p := int32(x.rng.IntN(int(x.parts)))
	mp, err := partitionMeta(x.t, x.c.LiveAddr(), x.topic, p)
	if err != nil || mp.Leader < 0 {
		return x.node()
	}
	var fs []int32
	for _, r := range mp.Replicas {
		if r != mp.Leader {
			fs = append(fs, r)
		}
	}
	if len(fs) == 0 {
		return x.node()
	}
	slices.Sort(fs)
	return fs[x.rng.IntN(len(fs))]
}

func (x *chaos) controller() int32 {
	if id, err := controllerID(x.t, x.c); err == nil && id > 0 {
		return id
	}
	return x.node()
}

// cutMode is Blackhole or Reset, at random.
func (x *chaos) cutMode() testutil.Mode {
	if x.rng.IntN(2) == 0 {
		return testutil.Blackhole
	}
	return testutil.Reset
}

func (x *chaos) kill(role string, id int32) (string, func()) {
	x.c.Node(id).Kill()
	return fmt.Sprintf("kill -9 %s %d", role, id), x.c.Node(id).Restart
}

var chaosFaults = []chaosFault{
	{"kill-leader", func(x *chaos) (string, func()) { return x.kill("leader", x.leader()) }},
	{"kill-follower", func(x *chaos) (string, func()) { return x.kill("follower", x.follower()) }},
	{"kill-controller", func(x *chaos) (string, func()) { return x.kill("controller", x.controller()) }},
	{"cut-peers", func(x *chaos) (string, func()) {
		id, m := x.node(), x.cutMode()
		x.c.CutPeers(id, m)
		return fmt.Sprintf("cut node %d from its peers (%s)", id, m), func() { x.c.Heal(id) }
	}},
	{"cut-etcd", func(x *chaos) (string, func()) {
		id, m := x.node(), x.cutMode()
		x.c.CutEtcd(id, m)
		return fmt.Sprintf("cut node %d from etcd (%s)", id, m), func() { x.c.Heal(id) }
	}},
	{"cut-both", func(x *chaos) (string, func()) {
		id, m := x.leader(), x.cutMode()
		x.c.CutPeers(id, m)
		x.c.CutEtcd(id, m)
		return fmt.Sprintf("cut leader %d from its peers and etcd (%s)", id, m), func() { x.c.Heal(id) }
	}},
	{"etcd-restart", func(x *chaos) (string, func()) {
		x.c.RestartEtcd()
		return "restart etcd", func() {}
	}},
	{"etcd-restart-then-cut", func(x *chaos) (string, func()) {
		x.c.RestartEtcd()
		id := x.leader()
		x.c.CutPeers(id, testutil.Blackhole)
		x.c.CutEtcd(id, testutil.Blackhole)
		return fmt.Sprintf("restart etcd, then cut leader %d from its peers and etcd", id), func() { x.c.Heal(id) }
	}},
	{"preferred-election", func(x *chaos) (string, func()) {
		adm := kadm.NewClient(newClusterKgo(x.t, x.c))
		defer adm.Close()
		set := kadm.TopicsSet{x.topic: {}}
		for p := range x.parts {
			set[x.topic][p] = struct{}{}
		}
		res, err := adm.ElectLeaders(testCtx(x.t, 10*time.Second), kadm.ElectPreferredReplica, set)
		n := 0
		for _, ps := range res {
			for _, r := range ps {
				if r.Err == nil {
					n++
				}
			}
		}
		return fmt.Sprintf("preferred election (%d partitions moved, err %v)", n, err), func() {}
	}},
}

// TestChaos applies random faults, one at a time and each held a random
// few seconds, to three brokers on the settings under idempotent
// acks=all producers, group readers and assign readers. After the last
// heal every acknowledged record must be read back at its offset, no
// offset may hold two values, no reader may have been rewound, every
// broker must be registered and every ISR full. -chaos.duration sets how
// long faults are injected, -chaos.seed replays a run's choice of faults
// and holds (the brokers' timing still varies, so a replay may differ).
func TestChaos(t *testing.T) {
	seed := *chaosSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("chaos: seed %d (replay with -chaos.seed=%d), faults for %v", seed, seed, *chaosDuration)
	const topic, parts = "chaos", 4
	x := &chaos{t: t, rng: rand.New(rand.NewPCG(seed, 0)), topic: topic, parts: parts}
	x.c = startFaultTopic(t, topic, parts, nil)
	w := startWorkload(t, x.c, topic, parts, workload.Config{Producers: 3, GroupReaders: 2, AssignReaders: 1})
	w.WaitAcks(t, 200, 30*time.Second)

	applied := map[string]int{}
	var slowest time.Duration
	var history []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: seed %d, faults applied:\n%s", seed, strings.Join(history, "\n"))
		}
	})
	end := time.Now().Add(*chaosDuration)
	for i := 0; time.Now().Before(end); i++ {
		f := chaosFaults[x.rng.IntN(len(chaosFaults))]
		// How long the fault lasts is part of the fault, not a wait for
		// something to happen.
		hold := time.Duration(500+x.rng.IntN(4500)) * time.Millisecond
		desc, heal := f.apply(x)
		applied[f.name]++
		history = append(history, fmt.Sprintf("%d: %s for %v", i, desc, hold))
		time.Sleep(hold)
		heal()
		// Mostly let the cluster recover before the next fault; sometimes
		// pile the next one onto the recovery.
		if x.rng.IntN(10) < 7 {
			slowest = max(slowest, waitHealthy(t, x.c, topic, parts, 3, 90*time.Second))
		}
	}
	x.c.HealAll()
	took := waitHealthy(t, x.c, topic, parts, 3, 120*time.Second)
	w.WaitAcks(t, 100, 60*time.Second)
	checkWorkload(t, w)
	var counts []string
	for _, f := range chaosFaults {
		counts = append(counts, fmt.Sprintf("%s=%d", f.name, applied[f.name]))
	}
	t.Logf("chaos: seed %d: %d faults (%s); %s; healthy %v after the last heal, slowest recovery %v",
		seed, len(history), strings.Join(counts, " "), w.Summary(), took.Round(time.Millisecond), slowest.Round(time.Millisecond))
}
