package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// kafka-transactions.sh list, describe, describe-producers, find-hanging
// and abort from Kafka 4.4's tools: an open transaction of a franz-go
// producer is listed and described; a hanging transaction (a transactional
// batch the coordinator never heard of, written while the KIP-890 check is
// off) is found and aborted, after which read_committed moves past it.
func TestTransactionsCLI(t *testing.T) {
	t.Parallel()
	n := testutil.StartBroker(t, map[string]string{"transaction.partition.verification.enable": "false"})
	ctx := testCtx(t, 4*time.Minute)
	tool := kafkaToolIn(t, ctx, n.Addr(), t.TempDir())
	adm := newAdmin(t, n.Addr())
	const topic = "cli-txn"
	createTopic(t, adm, topic, 2, nil)
	id := topicID(t, adm, topic)

	// The open transaction outlives every tool run (a JVM each, slow
	// under load): with a minute's timeout the coordinator aborted it
	// first and EndTransaction was fenced.
	cl := newKgo(t, n.Addr(), kgo.TransactionalID("cli-open"), kgo.TransactionTimeout(10*time.Minute),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := tool("", "org.apache.kafka.tools.TransactionsCommand", args...)
		if err != nil {
			t.Fatalf("kafka-transactions.sh %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	out := run("list")
	if !strings.Contains(out, "cli-open") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("list:\n%s", out)
	}
	out = run("describe", "--transactional-id", "cli-open")
	if !strings.Contains(out, "Ongoing") || !strings.Contains(out, topic+"-1") {
		t.Fatalf("describe:\n%s", out)
	}
	out = run("describe-producers", "--topic", topic, "--partition", "1")
	if !strings.Contains(out, "ProducerId") || !strings.Contains(out, "CurrentTransactionStartOffset") {
		t.Fatalf("describe-producers:\n%s", out)
	}

	// A hanging transaction on partition 0: producer 999999 is unknown to
	// the coordinator, and its Produce v11 is not verified (Produce v12 is
	// a transactions version 2 request, whose partition the leader adds
	// to the transaction: that would fail).
	tv1 := newKgo(t, n.Addr(), kgo.MaxVersions(produceV11()))
	hang := produceRawTxn(t, tv1, topic, id, 0, kmsg.StringPtr("nobody"), rawTxnBatch(999999, 0, 0, "hanging"))
	wantCode(t, "the hanging batch", hang.ErrorCode, nil)
	testutil.Eventually(t, 60*time.Second, func() error {
		out = run("find-hanging", "--broker-id", fmt.Sprint(n.NodeID()), "--max-transaction-timeout", "0")
		if !strings.Contains(out, "999999") {
			return fmt.Errorf("find-hanging did not report producer 999999:\n%s", out)
		}
		return nil
	})
	if strings.Contains(out, fmt.Sprintf("%s\t1\t", topic)) {
		t.Fatalf("find-hanging reported the live transaction as hanging:\n%s", out)
	}
	run("abort", "--topic", topic, "--partition", "0", "--start-offset", fmt.Sprint(hang.BaseOffset))
	if lo := listOffsetRaw(t, cl, topic, 0, -1); lo.Offset != hang.BaseOffset+2 {
		t.Fatalf("log end offset %d after the abort, want %d (the batch and its marker)", lo.Offset, hang.BaseOffset+2)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	commitOne(t, cl, topic, 0, "end")
	got := readCommitted(t, n.Addr(), topic, "end")
	for _, v := range got {
		if v == "hanging" {
			t.Fatalf("read_committed read the aborted hanging record: %q", got)
		}
	}
}
