// Package chaos is samsa's fault-injection suite: three `samsa serve`
// processes and an etcd, each in a network namespace of its own on a
// bridge the suite creates, under a Jepsen-style queue workload
// (internal/workload, shared with the compat cluster tests: idempotent
// acks=all producers, assign-mode and consumer-group readers, every ack
// and every read recorded), with one fault per phase and its checker after
// the run. It needs root, ip, iptables and tc; the suite is its tests:
//
//	go test ./internal/chaos                      # the short profile (make test)
//	go test ./internal/chaos -chaos.full -v       # every phase (make chaos)
//	go test ./internal/chaos -chaos.full -v -chaos.broker=kafka  # make chaos-kafka
//
// With -chaos.broker=kafka the nodes run Apache Kafka 4.4 instead (three
// KRaft nodes in combined mode, no etcd; kafka_test.go says how each
// phase maps onto them), under the same workload and checker.
//
// Layout: run N (the first free of 1..60, net_test.go) has a bridge
// scN-br0 with 10.77.N.1/24 in the root namespace, where the workload
// runs; namespace scN-etcd (10.77.N.10) runs a three-member embedded etcd
// cluster, each member a helper process (this package's test binary,
// re-executed) on a port of its own (2379, 2389, 2399); scN-n1..3
// (10.77.N.11-13) run node 1..3. Every name of a run starts with "scN-",
// so a run first sweeps whatever a killed earlier run of its number left
// behind, and two runs on one machine keep apart. Node 3's log
// directory is a 256 MiB tmpfs (the full-disk phase fills it); every node
// runs with samsa.test.fault.file, through which a phase makes its log
// file system fail writes and fsyncs (logstore.FaultFS). A latency phase
// runs a delayer (the test binary again, nfqueue_test.go) in each node
// namespace it delays: iptables rules with --queue-bypass send what the
// node gets from its peers, the clients and etcd to an NFQUEUE, and the
// delayer releases each packet in order after the phase's delay (the
// kernels the suite runs on lack sch_netem).
package chaos
