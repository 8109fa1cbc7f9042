package compat

// The controller's requests with a timeout of 0 or less, against samsa and
// Apache Kafka 4.4: Kafka's controller finds the deadline (now plus the
// timeout) passed and answers REQUEST_TIMED_OUT, without a message,
// checking and changing nothing. CreateTopics, CreatePartitions and
// DeleteTopics time every topic out (a bad name, an existing or unknown
// topic alike); ElectLeaders every partition, through kafka-go's Client
// (whose Timeout is 0 unless set) and a raw client, while a positive
// timeout runs it. kafka-go's own TestClientElectLeaders (timeout 0) fails
// against Kafka 4.4 on this and passed against samsa.

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminTimeoutZero(t *testing.T) {
	t.Parallel()
	adminTimeoutChecks(t, admBroker(t, nil).Addr())
}

func TestAdminTimeoutZeroKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	adminTimeoutChecks(t, kb.Addr)
}

func adminTimeoutChecks(t *testing.T, addr string) {
	t.Run("topics", func(t *testing.T) { adminTimeoutZeroCheck(t, addr) })
	t.Run("ElectLeaders", func(t *testing.T) { electLeadersTimeoutCheck(t, addr) })
}

func adminTimeoutZeroCheck(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	ctx := admCtx(t, admTimeout)
	exists, fresh, unknown := admTopic("tmo-exists"), admTopic("tmo-new"), admTopic("tmo-unknown")
	admCreate(t, adm, exists, 1, 1, nil)
	timedOut := func(what, topic string, code int16, msg *string) {
		t.Helper()
		if code != kerr.RequestTimedOut.Code || msg != nil {
			t.Errorf("%s %s: error %d, message %v; want %d, none", what, topic, code, msg, kerr.RequestTimedOut.Code)
		}
	}

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 0
	for _, n := range []string{fresh, exists, "bad name!"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, 1
		ct.Topics = append(ct.Topics, rt)
	}
	cr, err := ct.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	for _, st := range cr.Topics {
		timedOut("CreateTopics", st.Topic, st.ErrorCode, st.ErrorMessage)
		if st.NumPartitions != -1 || st.ReplicationFactor != -1 || st.Configs == nil || len(st.Configs) != 0 {
			t.Errorf("CreateTopics %s: %d partitions, rf %d, configs %v; want -1, -1 and an empty list",
				st.Topic, st.NumPartitions, st.ReplicationFactor, st.Configs)
		}
	}

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 0
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: exists, Count: 2}, {Topic: unknown, Count: 2}}
	pr, err := cp.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	for _, st := range pr.Topics {
		timedOut("CreatePartitions", st.Topic, st.ErrorCode, st.ErrorMessage)
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TimeoutMillis = -1
	for _, n := range []string{exists, unknown} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		dt.Topics = append(dt.Topics, rt)
		dt.TopicNames = append(dt.TopicNames, n)
	}
	dr, err := dt.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	for _, st := range dr.Topics {
		timedOut("DeleteTopics", *st.Topic, st.ErrorCode, st.ErrorMessage)
	}

	// Nothing changed: the new topic was not created, the existing one
	// keeps its one partition.
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = false
	for _, n := range []string{exists, fresh} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		md.Topics = append(md.Topics, rt)
	}
	mr, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	for _, mt := range mr.Topics {
		switch *mt.Topic {
		case exists:
			if mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
				t.Errorf("%s after: error %d, %d partitions; want 0 and 1", exists, mt.ErrorCode, len(mt.Partitions))
			}
		case fresh:
			if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("%s after: error %d, want %d (never created)", fresh, mt.ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}
		}
	}
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
