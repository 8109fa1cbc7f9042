package compat

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// The first FindCoordinators on a fresh broker, before __consumer_offsets
// and __transaction_state exist, asked of Apache Kafka 4.4 and of samsa:
// Kafka starts creating the topic and answers COORDINATOR_NOT_AVAILABLE,
// to the request that started it and to every one arriving meanwhile,
// and names the coordinator once the topic's partition has a leader.
// samsa created the topic within the first request and named the
// coordinator at once, while a request arriving at the same moment got
// COORDINATOR_NOT_AVAILABLE. The first answer of each key type is
// compared (v3 for a group, v4 for a transactional id); the requests sent
// together right after it must each be COORDINATOR_NOT_AVAILABLE or the
// broker itself (the only one), and all name it in the end.
func TestFindCoordinatorFirstKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	n := admBroker(t, nil)
	kafka := findCoordinatorProbe(t, kb.Addr, 1)
	samsa := findCoordinatorProbe(t, n.Addr(), n.Broker.NodeID())
	compareProbes(t, kafka, samsa)
}

// findCoordinatorProbe is the first answers of the broker at addr, whose
// node id is id, to a group's and a transactional id's FindCoordinator.
func findCoordinatorProbe(t *testing.T, addr string, id int32) map[string]string {
	t.Helper()
	out := map[string]string{}
	type answer struct {
		code int16
		msg  string
		node int32
	}
	ask := func(c *admConn, keyType int8, v int16, key string) answer {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = keyType
		req.CoordinatorKey, req.CoordinatorKeys = key, []string{key}
		resp := c.roundTrip(req, v).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			return answer{resp.ErrorCode, derefStr(resp.ErrorMessage), resp.NodeID}
		}
		if len(resp.Coordinators) != 1 {
			t.Fatalf("FindCoordinator v%d: %d coordinators for one key", v, len(resp.Coordinators))
		}
		fc := resp.Coordinators[0]
		return answer{fc.ErrorCode, derefStr(fc.ErrorMessage), fc.NodeID}
	}
	for _, k := range []struct {
		name    string
		keyType int8
		v       int16
	}{{"group", 0, 3}, {"transaction", 1, 4}} {
		first := ask(admDial(t, addr), k.keyType, k.v, k.name+"-first")
		out[k.name+" first"] = fmt.Sprintf("error %d %q node %d", first.code, first.msg, first.node)

		// Several at once, each on its own connection, while the topic
		// is being created.
		const together = 8
		answers := make([]answer, together)
		conns := make([]*admConn, together)
		for i := range conns {
			conns[i] = admDial(t, addr)
		}
		var wg sync.WaitGroup
		for i := range together {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorType = k.keyType
				key := fmt.Sprintf("%s-%d", k.name, i)
				req.CoordinatorKey, req.CoordinatorKeys = key, []string{key}
				resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
				if err := rawRoundTrip(conns[i], req, resp, k.v); err != nil {
					t.Errorf("%s %d: %v", k.name, i, err)
					return
				}
				a := answer{resp.ErrorCode, derefStr(resp.ErrorMessage), resp.NodeID}
				if k.v >= 4 && len(resp.Coordinators) == 1 {
					fc := resp.Coordinators[0]
					a = answer{fc.ErrorCode, derefStr(fc.ErrorMessage), fc.NodeID}
				}
				answers[i] = a
			}()
		}
		wg.Wait()
		for i, a := range answers {
			switch {
			case a.code == kerr.CoordinatorNotAvailable.Code && a.node == -1:
			case a.code == 0 && a.node == id:
			default:
				t.Errorf("%s: %s %d together: error %d %q node %d; want COORDINATOR_NOT_AVAILABLE or node %d",
					addr, k.name, i, a.code, a.msg, a.node, id)
			}
		}
		c := admDial(t, addr)
		testutil.Eventually(t, 60*time.Second, func() error {
			for i := range together {
				a := ask(c, k.keyType, k.v, fmt.Sprintf("%s-%d", k.name, i))
				if a.code != 0 || a.node != id {
					return fmt.Errorf("%s %d: error %d %q node %d", k.name, i, a.code, a.msg, a.node)
				}
			}
			return nil
		})
	}
	return out
}

// readFrameAs decodes frame, the response to the request sent with corr,
// as version v of resp.
func readFrameAs(frame []byte, corr int32, resp kmsg.Response, v int16) error {
	if len(frame) < 4 {
		return fmt.Errorf("frame of %d bytes", len(frame))
	}
	if got := int32(uint32(frame[0])<<24 | uint32(frame[1])<<16 | uint32(frame[2])<<8 | uint32(frame[3])); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp.SetVersion(v)
	if resp.IsFlexible() {
		var err error
		if body, err = admSkipTags(body); err != nil {
			return err
		}
	}
	return resp.ReadFrom(body)
}

// AddOffsetsToTxn creates __consumer_offsets when it is missing, and the
// FindCoordinator that found it missing creates it in the background:
// several transactional producers adding a group's offsets on a fresh
// broker, at the same moment as a FindCoordinator of the group, each get
// their partition added. The requests that lost the race to create the
// topic were answered TOPIC_ALREADY_EXISTS, which a producer does not
// retry (its transaction fails).
func TestAddOffsetsToTxnWhileOffsetsTopicIsCreated(t *testing.T) {
	n := txnBroker(t)
	addr := n.Addr()
	const producers = 6
	type producer struct {
		id    string
		pid   int64
		epoch int16
	}
	var ps []producer
	for i := range producers {
		id := fmt.Sprintf("race-tx-%d", i)
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
		retryTxn(t, addr, fc, 4, func(r *kmsg.FindCoordinatorResponse) int16 { return r.Coordinators[0].ErrorCode })
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
		r := retryTxn(t, addr, init, 4, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
		if r.ErrorCode != 0 {
			t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
		ps = append(ps, producer{id, r.ProducerID, r.ProducerEpoch})
	}
	const group = "race-group"
	conns := make([]*admConn, producers+1)
	for i := range conns {
		conns[i] = admDial(t, addr)
	}
	var wg sync.WaitGroup
	codes := make([]int16, producers)
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, group
			req.SetVersion(3)
			resp := req.ResponseKind()
			if err := rawRoundTrip(conns[i], req, resp, 3); err != nil {
				t.Errorf("AddOffsetsToTxn %s: %v", p.id, err)
				return
			}
			codes[i] = resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{group}
		req.SetVersion(4)
		if err := rawRoundTrip(conns[producers], req, req.ResponseKind(), 4); err != nil {
			t.Errorf("FindCoordinator: %v", err)
		}
	}()
	wg.Wait()
	for i, code := range codes {
		if code != 0 {
			t.Errorf("AddOffsetsToTxn %s: %v", ps[i].id, kerr.ErrorForCode(code))
		}
	}
}

// rawRoundTrip sends req at version v on c and decodes the answer into
// resp, reporting failures instead of ending the test (for goroutines).
func rawRoundTrip(c *admConn, req kmsg.Request, resp kmsg.Response, v int16) error {
	req.SetVersion(v)
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	const corr = 4242
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("samsa-compat"))
	if _, err := c.c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		return err
	}
	frame, err := c.readFrame()
	if err != nil {
		return err
	}
	return readFrameAs(frame, corr, resp, v)
}
