package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A run's names: every namespace, link and mount of a run starts with its
// prefix "sc<N>-" and its bridge has the subnet 10.77.N.0/24, where N
// (1..maxRuns) is the first run number whose lock file (runLock) this
// process could take. Runs on one machine (two packages' go test, two
// engineers' make test) so neither collide nor sweep each other; a run
// sweeps only what a dead run of its own number left behind. setRun sets
// them: in the test process by claimRun, in the etcd helper from runEnv.
var (
	runN      int
	prefix    string
	bridge    string
	subnet    string
	clientIP  string // the root namespace's address on the bridge
	etcdNS    string
	etcdIP    string
	tmpfsName string // the tmpfs mounts' source, for the sweep
)

const (
	maxRuns = 60
	runEnv  = "SAMSA_CHAOS_RUN" // the run number, for the etcd helper
	chain   = "SAMSA-CHAOS"     // the iptables chain every fault rule goes in
)

func setRun(n int) {
	runN = n
	prefix = fmt.Sprintf("sc%d-", n)
	bridge = prefix + "br0"
	subnet = fmt.Sprintf("10.77.%d", n)
	clientIP = subnet + ".1"
	etcdNS = prefix + "etcd"
	etcdIP = subnet + ".10"
	tmpfsName = prefix + "tmpfs"
}

func nodeNS(id int) string { return fmt.Sprintf("%sn%d", prefix, id) }
func nodeIP(id int) string { return fmt.Sprintf("%s.%d", subnet, 10+id) }

// runLock is run n's lock file.
func runLock(n int) string { return filepath.Join(os.TempDir(), fmt.Sprintf("samsa-chaos-%d.lock", n)) }

// claimRun takes the first free run number for the rest of the test and
// sets the run's names; the lock goes with the process, so a killed run's
// number is free again and its leftovers are swept by the next run of it.
func claimRun(t testing.TB) {
	t.Helper()
	for n := 1; n <= maxRuns; n++ {
		f, err := os.OpenFile(runLock(n), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		setRun(n)
		t.Cleanup(func() { _ = f.Close() })
		return
	}
	t.Fatalf("chaos: all %d run numbers are taken (their lock files %s)", maxRuns, runLock(1))
}

// run runs a command and returns its error with its output.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// must runs a command or fails the test.
func must(t testing.TB, args ...string) {
	t.Helper()
	if err := run(args...); err != nil {
		t.Fatal(err)
	}
}

// requireRoot fails the test unless it can make namespaces: the suite
// never skips.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("chaos: the fault suite needs root (network namespaces, iptables); CI runs as root")
	}
	for _, tool := range []string{"ip", "iptables", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("chaos: %s not found (make test-deps installs iproute2 and iptables)", tool)
		}
	}
}

// sweep removes every namespace, link and mount an earlier run of this
// run's number left.
func sweep() {
	defer sweepMounts()
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
				killNamespace(f[0])
				_ = run("ip", "netns", "del", f[0])
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, prefix) {
				_ = run("ip", "link", "del", name)
			}
		}
	}
}

// tmpfsNode is the node whose log directory is a size-limited tmpfs of
// tmpfsSize (the full-disk phase fills it).
const (
	tmpfsNode = 3
	tmpfsSize = "256m"
)

// mountTmpfs mounts a tmpfs of tmpfsSize at dir until the test ends.
func mountTmpfs(t testing.TB, dir string) {
	t.Helper()
	must(t, "mount", "-t", "tmpfs", "-o", "size="+tmpfsSize, tmpfsName, dir)
	t.Cleanup(func() { _ = run("umount", "-l", dir) })
}

// sweepMounts unmounts the tmpfs a killed earlier run left.
func sweepMounts() {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == tmpfsName {
			_ = run("umount", "-l", f[1])
		}
	}
}

// killNamespace kills every process left in namespace ns.
func killNamespace(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, pid := range strings.Fields(string(out)) {
		_ = run("kill", "-9", pid)
	}
}

// setupNetwork makes the bridge of the run (claimRun) and one namespace
// per name, each with a veth to the bridge and address ip(i); everything
// is removed when the test ends.
func setupNetwork(t testing.TB, names []string, ips []string) {
	t.Helper()
	sweep()
	t.Cleanup(sweep)
	must(t, "ip", "link", "add", bridge, "type", "bridge")
	must(t, "ip", "addr", "add", clientIP+"/24", "dev", bridge)
	must(t, "ip", "link", "set", bridge, "up")
	for i, ns := range names {
		host, peer := fmt.Sprintf("%sv%d", prefix, i), fmt.Sprintf("%sp%d", prefix, i)
		must(t, "ip", "netns", "add", ns)
		must(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer)
		must(t, "ip", "link", "set", peer, "netns", ns)
		must(t, "ip", "link", "set", host, "master", bridge)
		must(t, "ip", "link", "set", host, "up")
		must(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
		must(t, "ip", "netns", "exec", ns, "ip", "link", "set", peer, "name", "eth0")
		must(t, "ip", "netns", "exec", ns, "ip", "addr", "add", ips[i]+"/24", "dev", "eth0")
		must(t, "ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
		for _, hook := range []string{"INPUT", "OUTPUT"} {
			if hook == "INPUT" {
				must(t, "ip", "netns", "exec", ns, "iptables", "-N", chain)
			}
			must(t, "ip", "netns", "exec", ns, "iptables", "-I", hook, "-j", chain)
		}
	}
}

// cut drops (or, with reject, refuses) traffic between namespace ns and
// every address in peers, both ways unless oneWay (then only what ns sends).
func cut(t testing.TB, ns string, peers []string, reject, oneWay bool) {
	t.Helper()
	target := []string{"-j", "DROP"}
	if reject {
		target = []string{"-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"}
	}
	for _, ip := range peers {
		must(t, append([]string{"ip", "netns", "exec", ns, "iptables", "-A", chain, "-d", ip}, target...)...)
		if !oneWay {
			must(t, append([]string{"ip", "netns", "exec", ns, "iptables", "-A", chain, "-s", ip}, target...)...)
		}
	}
}

// lose drops a fraction of what ns sends to each peer (iptables'
// statistic match: the kernels the suite runs on may lack sch_netem).
func lose(t testing.TB, ns string, peers []string, probability string) {
	t.Helper()
	for _, ip := range peers {
		must(t, "ip", "netns", "exec", ns, "iptables", "-A", chain, "-d", ip,
			"-m", "statistic", "--mode", "random", "--probability", probability, "-j", "DROP")
	}
}

// heal removes every fault rule of namespace ns.
func heal(t testing.TB, ns string) {
	t.Helper()
	must(t, "ip", "netns", "exec", ns, "iptables", "-F", chain)
}
