package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findCoordinatorRequest asks for the coordinator of keys of keyType (v4+
// batches them; before, the one key).
func findCoordinatorRequest(v int16, keyType int8, keys ...string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorType = v, keyType
	if v < 4 {
		req.CoordinatorKey = keys[0]
	} else {
		req.CoordinatorKeys = keys
	}
	return req
}

// waitCoordinator polls FindCoordinator (the super user's) until the
// coordinator of key, of keyType, is broker 1: the internal topic it lives
// in is created on first use, COORDINATOR_NOT_AVAILABLE until then.
func (b *handlerBroker) waitCoordinator(keyType int8, key string) {
	b.t.Helper()
	b.eventually(func() error {
		resp, err := b.try(findCoordinatorRequest(4, keyType, key))
		if err != nil {
			return err
		}
		c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return err
		}
		if c.NodeID != 1 {
			return fmt.Errorf("coordinator %d", c.NodeID)
		}
		return nil
	})
}

// FindCoordinator: a group's (key type 0) and a transactional id's (1)
// coordinator is the one broker once the internal topic exists, at every
// version, single-key before v4 and batched from v4; alice (no ACLs) gets
// GROUP_AUTHORIZATION_FAILED and TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestFindCoordinatorHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	b.waitCoordinator(0, "g")
	b.waitCoordinator(1, "tx")
	for _, v := range []int16{0, 1, 2, 3} {
		for keyType, key := range map[int8]string{0: "g", 1: "tx"} {
			if v == 0 && keyType == 1 {
				continue // v0 has no key type
			}
			resp := b.do(findCoordinatorRequest(v, keyType, key)).(*kmsg.FindCoordinatorResponse)
			wantCode(t, fmt.Sprintf("v%d type %d", v, keyType), resp.ErrorCode, nil)
			if resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port == 0 {
				t.Errorf("v%d type %d: coordinator %d at %s:%d", v, keyType, resp.NodeID, resp.Host, resp.Port)
			}
		}
	}
	for _, v := range []int16{4, 5, 6} {
		resp := b.do(findCoordinatorRequest(v, 0, "g", "g2", "g3")).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 3 {
			t.Fatalf("v%d: %d coordinators for 3 keys", v, len(resp.Coordinators))
		}
		for _, c := range resp.Coordinators {
			wantCode(t, fmt.Sprintf("v%d %s", v, c.Key), c.ErrorCode, nil)
			if c.NodeID != 1 {
				t.Errorf("v%d %s: coordinator %d", v, c.Key, c.NodeID)
			}
		}
	}

	group := b.as("alice", findCoordinatorRequest(4, 0, "g")).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "group as alice", group.Coordinators[0].ErrorCode, kerr.GroupAuthorizationFailed)
	txn := b.as("alice", findCoordinatorRequest(4, 1, "tx")).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "transactional id as alice", txn.Coordinators[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
}

// waitGroupCoordinator is waitCoordinator for group, then polls
// OffsetFetch until the coordinator has loaded the group's partition
// (COORDINATOR_LOAD_IN_PROGRESS until then).
func (b *handlerBroker) waitGroupCoordinator(group string) {
	b.t.Helper()
	b.waitCoordinator(0, group)
	b.eventually(func() error {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		req.Groups = append(req.Groups, g)
		resp, err := b.try(req)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode)
	})
}
