package kafkaref

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StartCluster formats and starts n combined-mode KRaft nodes (node ids
// 1..n, every one a broker and a voter of the controller quorum) in
// subdirectories of o.Dir, with o's heap and properties for each and the
// internal topics replicated three ways (min.insync.replicas 2) when n is
// at least 3; o.Listeners gives every node more listeners, as for Start.
// It waits until every node answers Metadata listing all n brokers. On
// error nothing is left running.
func StartCluster(ctx context.Context, libs string, n int, o Options) ([]*Broker, error) {
	if o.Dir == "" || n < 1 {
		return nil, errors.New("kafkaref: StartCluster needs Options.Dir and n >= 1")
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 1024
	}
	per := 2 + len(o.Listeners) // PLAINTEXT, CONTROLLER, o.Listeners
	ports, err := FreePorts(per * n)
	if err != nil {
		return nil, err
	}
	id, err := ClusterID()
	if err != nil {
		return nil, err
	}
	var addrs, ctrls []string
	for i := range n {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(ports[per*i]))
		ctrls = append(ctrls, "127.0.0.1:"+strconv.Itoa(ports[per*i+1]))
	}
	var nodes []*Broker
	stopAll := func() {
		for _, b := range nodes {
			_ = b.Stop(10 * time.Second)
		}
	}
	for i := range n {
		dir := filepath.Join(o.Dir, "node"+strconv.Itoa(i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			stopAll()
			return nil, err
		}
		b := &Broker{Addr: addrs[i], Controller: ctrls[i], Dir: dir, ClusterID: id, Listeners: map[string]string{}, exited: make(chan struct{})}
		for j, name := range o.Listeners {
			b.Listeners[name] = "127.0.0.1:" + strconv.Itoa(ports[per*i+2+j])
		}
		propsPath := filepath.Join(dir, "server.properties")
		extra := withListeners(addrs[i], ctrls[i], o.Props, b.Listeners)
		if err := Prepare(ctx, libs, id, propsPath, ClusterNodeProps(i+1, addrs, ctrls, filepath.Join(dir, "data"), extra)); err != nil {
			stopAll()
			return nil, err
		}
		no := o
		no.Dir = dir
		if err := b.launch(libs, no, propsPath); err != nil {
			stopAll()
			return nil, err
		}
		nodes = append(nodes, b)
	}
	for _, b := range nodes {
		if err := b.waitBrokers(ctx, n); err != nil {
			stopAll()
			return nil, err
		}
	}
	return nodes, nil
}

// ClusterNodeProps are the server.properties of node id (1..len(addrs)) of
// a cluster of combined-mode KRaft nodes, every one a broker and a voter,
// whose PLAINTEXT listeners are addrs and CONTROLLER listeners ctrls: its
// log dir logDir, the internal topics replicated min(n, 3) ways with a
// min ISR one less, and extra applied over them. StartCluster runs such
// nodes on loopback ports; a caller that runs the processes itself (in
// network namespaces, say) passes its own addresses, then Prepare and
// NodeArgv.
func ClusterNodeProps(id int, addrs, ctrls []string, logDir string, extra map[string]string) map[string]string {
	n := len(addrs)
	var voters []string
	for i, c := range ctrls {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, c))
	}
	rf, minISR := strconv.Itoa(min(n, 3)), strconv.Itoa(max(min(n, 3)-1, 1))
	props := serverProps(addrs[id-1], ctrls[id-1], logDir, map[string]string{
		"node.id":                                          strconv.Itoa(id),
		"controller.quorum.voters":                         strings.Join(voters, ","),
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    minISR,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            minISR,
	})
	delete(props, "controller.quorum.bootstrap.servers")
	maps.Copy(props, extra)
	return props
}

// Prepare writes props to propsPath and formats the storage of the node
// they describe as a member of cluster clusterID.
func Prepare(ctx context.Context, libs, clusterID, propsPath string, props map[string]string) error {
	if err := os.WriteFile(propsPath, []byte(renderProps(props)), 0o644); err != nil {
		return err
	}
	return format(ctx, libs, clusterID, propsPath)
}

// NodeArgv is the command line ("java", ...) of a node's JVM on the
// properties at propsPath, with a heap of heapMB and Kafka's GC settings,
// for a caller that starts the process itself.
func NodeArgv(libs string, heapMB int, propsPath string) []string {
	return append([]string{"java"}, nodeArgs(libs, heapMB, propsPath)...)
}

// waitBrokers polls Metadata at b until it lists n brokers.
func (b *Broker) waitBrokers(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var lastErr error
	for {
		select {
		case <-b.exited:
			return fmt.Errorf("kafkaref: node at %s exited (%v)%s", b.Addr, b.waitErr, b.tailNote())
		default:
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
		if err == nil {
			pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
			var m kadm.BrokerDetails
			m, lastErr = kadm.NewClient(cl).ListBrokers(pctx)
			pcancel()
			cl.Close()
			if lastErr == nil && len(m) >= n {
				return nil
			}
			if lastErr == nil {
				lastErr = fmt.Errorf("%d of %d brokers registered", len(m), n)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaref: node at %s: %v: %w%s", b.Addr, lastErr, ctx.Err(), b.tailNote())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Relaunch starts an exited node of StartCluster again on its own
// directory and ports (the data kept, nothing formatted), with o's heap,
// CPUs and Started; the caller waits for it to serve.
func (b *Broker) Relaunch(libs string, o Options) error {
	select {
	case <-b.exited:
	default:
		return fmt.Errorf("kafkaref: node at %s still runs", b.Addr)
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 1024
	}
	o.Dir = b.Dir
	b.exited, b.waitErr, b.logFile = make(chan struct{}), nil, nil
	return b.launch(libs, o, filepath.Join(b.Dir, "server.properties"))
}

// Kill sends SIGKILL to the node's process group and waits for it.
func (b *Broker) Kill() {
	select {
	case <-b.exited:
		return
	default:
	}
	_ = syscallKill(-b.Pid())
	<-b.exited
}
