package compat

// ElectLeaders' timeout, through kafka-go's Client (whose Timeout is 0
// unless set) and a raw client, against samsa and Apache Kafka 4.4: a
// timeout of 0 is answered REQUEST_TIMED_OUT without an election, a
// positive one runs it. kafka-go's own TestClientElectLeaders (timeout 0)
// fails against Kafka 4.4 on this and passed against samsa.

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestElectLeadersTimeout(t *testing.T) {
	t.Parallel()
	electLeadersTimeoutCheck(t, admBroker(t, nil).Addr())
}

func TestElectLeadersTimeoutKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	electLeadersTimeoutCheck(t, kb.Addr)
}

func electLeadersTimeoutCheck(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	topic := admTopic("elect-timeout")
	admCreate(t, adm, topic, 2, 1, nil)
	ctx := admCtx(t, admTimeout)
	tr := &kafka.Transport{} // not DefaultTransport, whose connections outlive the test
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: admTimeout, Transport: tr}

	for _, tc := range []struct {
		timeout   time.Duration
		top, part error // nil: none
	}{
		{0, kafka.RequestTimedOut, kafka.RequestTimedOut},
		// One broker: each partition's leader is its preferred one.
		{10 * time.Second, nil, kafka.ElectionNotNeeded},
	} {
		resp, err := client.ElectLeaders(ctx, &kafka.ElectLeadersRequest{Topic: topic, Partitions: []int{0, 1}, Timeout: tc.timeout})
		if err != nil {
			t.Fatalf("kafka-go ElectLeaders, timeout %v: %v", tc.timeout, err)
		}
		if !errors.Is(resp.Error, tc.top) || (tc.top == nil) != (resp.Error == nil) {
			t.Errorf("timeout %v: error %v, want %v", tc.timeout, resp.Error, tc.top)
		}
		if len(resp.PartitionResults) != 2 {
			t.Errorf("timeout %v: %d partition results, want 2", tc.timeout, len(resp.PartitionResults))
		}
		for _, pr := range resp.PartitionResults {
			if !errors.Is(pr.Error, tc.part) {
				t.Errorf("timeout %v: partition %d: %v, want %v", tc.timeout, pr.Partition, pr.Error, tc.part)
			}
		}
	}

	// Every partition (null topics) with a negative timeout: timed out,
	// no topic listed.
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ElectLeaders of every partition: %v", err)
	}
	if resp.ErrorCode != kerr.RequestTimedOut.Code || len(resp.Topics) != 0 {
		t.Errorf("ElectLeaders of every partition, timeout -1: error %d, %d topics; want %d and none",
			resp.ErrorCode, len(resp.Topics), kerr.RequestTimedOut.Code)
	}
}
