package compat

import (
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// Two share-partition leaders write the same share-partition's state at
// once over WriteShareGroupState, one at a newer leader epoch: the older
// one is fenced or lands first, never last, so the state read back is the
// newer writer's every time (each write's fencing check, append and cache
// update happen as one).
func TestShareStateConcurrentWritesKeepTheNewest(t *testing.T) {
	addr, _ := shareBroker(t, nil)
	const group = "share-state-order"
	var id [16]byte
	id[0], id[15] = 7, 9
	key := group + ":" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0"
	c1, c2 := admDial(t, addr), admDial(t, addr)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{key}
	// The first makes __share_group_state, and is answered
	// COORDINATOR_NOT_AVAILABLE until it is there.
	testutil.Eventually(t, 30*time.Second, func() error {
		return kerr.ErrorForCode(c1.roundTrip(fc, 6).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)
	})

	write := func(c *admConn, leaderEpoch int32, start int64) int16 {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = group
		rt := kmsg.NewWriteShareGroupStateRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = 0, 1, leaderEpoch, start
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req, 0).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode
	}
	read := func() (int64, int16) {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = group
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := c1.roundTrip(req, 0).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
		return p.StartOffset, p.ErrorCode
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		if code := write(c1, 1, 0); code != 0 {
			return fmt.Errorf("first write: error %d", code)
		}
		return nil
	})
	for i := range 200 {
		newer, older := int32(2*i+3), int32(2*i+2)
		var wg sync.WaitGroup
		wg.Go(func() { write(c1, newer, int64(1000*i+2)) })
		wg.Go(func() { write(c2, older, int64(1000*i+1)) })
		wg.Wait()
		start, code := read()
		if code != 0 || start != int64(1000*i+2) {
			t.Fatalf("round %d: state start offset %d (error %d), want %d, the write at leader epoch %d: the older write at %d landed last",
				i, start, code, 1000*i+2, newer, older)
		}
	}
}
