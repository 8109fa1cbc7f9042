package groups

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func shareHeartbeat(t *testing.T, c *Coordinator, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = "sg", member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"t1"}
	}
	resp := c.ShareGroupHeartbeat(Client{ID: member, Host: "/127.0.0.1"}, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("share heartbeat %s epoch %d: error %d %v", member, epoch, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

func describeShareGroup(c *Coordinator) kmsg.ShareGroupDescribeResponseGroup {
	return c.ShareGroupDescribe(&kmsg.ShareGroupDescribeRequest{GroupIDs: []string{"sg"}}).Groups[0]
}

// A share group's records in the log give a new coordinator the group as
// it was: its epochs, members and assignments, and the partitions with
// state; the members go on heartbeating with their epochs. A member that
// leaves is tombstoned, and a deleted group leaves nothing to load.
func TestShareGroupReload(t *testing.T) {
	l := newMemLog()
	c := New(cgTestConfig(l))
	defer c.Close()
	ownAll(t, c)
	a := shareHeartbeat(t, c, "a", 0)
	b := shareHeartbeat(t, c, "b", 0)
	x := shareHeartbeat(t, c, "x", 0)
	shareHeartbeat(t, c, "x", -1) // joins and leaves: the group epoch moves on
	a = shareHeartbeat(t, c, "a", a.MemberEpoch)
	b = shareHeartbeat(t, c, "b", b.MemberEpoch)
	before := describeShareGroup(c)
	if before.GroupEpoch <= x.MemberEpoch || len(before.Members) != 2 || a.MemberEpoch != before.GroupEpoch || b.MemberEpoch != before.GroupEpoch {
		t.Fatalf("before the reload: epoch %d with members %+v (x joined at %d)", before.GroupEpoch, before.Members, x.MemberEpoch)
	}
	info, err := c.ShareGroupInfo("sg")
	if err != nil || len(info.Initialized["t1"]) != 4 {
		t.Fatalf("initialized partitions %v (%v), want t1's 4", info.Initialized, err)
	}
	c.Close()

	c2 := New(cgTestConfig(l))
	defer c2.Close()
	ownAll(t, c2)
	after := describeShareGroup(c2)
	if fmt.Sprintf("%+v", before) != fmt.Sprintf("%+v", after) {
		t.Errorf("reloaded group differs:\nbefore %+v\nafter  %+v", before, after)
	}
	if info2, err := c2.ShareGroupInfo("sg"); err != nil || fmt.Sprint(info2.Initialized) != fmt.Sprint(info.Initialized) {
		t.Errorf("reloaded initialized partitions %v (%v), want %v", info2.Initialized, err, info.Initialized)
	}
	if r := shareHeartbeat(t, c2, "a", a.MemberEpoch); r.MemberEpoch != a.MemberEpoch {
		t.Errorf("a after the reload: epoch %d, want %d", r.MemberEpoch, a.MemberEpoch)
	}
	shareHeartbeat(t, c2, "b", -1)
	c2.Close()

	c3 := New(cgTestConfig(l))
	defer c3.Close()
	ownAll(t, c3)
	g := describeShareGroup(c3)
	if len(g.Members) != 1 || g.Members[0].MemberID != "a" || g.GroupEpoch != before.GroupEpoch+1 {
		t.Errorf("after b left and a reload: epoch %d, members %+v", g.GroupEpoch, g.Members)
	}
	shareHeartbeat(t, c3, "a", -1)
	dg := c3.DeleteGroups(t.Context(), &kmsg.DeleteGroupsRequest{Groups: []string{"sg"}})
	if dg.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: error %d", dg.Groups[0].ErrorCode)
	}
	c3.Close()
	c4 := New(cgTestConfig(l))
	defer c4.Close()
	ownAll(t, c4)
	if g := describeShareGroup(c4); g.ErrorCode == 0 {
		t.Errorf("deleted group loaded again: %+v", g)
	}
}
