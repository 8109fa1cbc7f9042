package broker_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions v0-v2 lists the transactional ids, filtered by state,
// producer id and (v2) a pattern; alice (no ACLs) sees none of them.
func TestListTransactionsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"lt": 1})
	pid, _ := b.beginTxn("ongoing", "lt")
	b.initTxn("empty")
	ids := func(resp kmsg.Response) []string {
		r := resp.(*kmsg.ListTransactionsResponse)
		wantCode(t, "ListTransactions", r.ErrorCode, nil)
		var ids []string
		for _, s := range r.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		slices.Sort(ids)
		return ids
	}
	list := func(v int16) *kmsg.ListTransactionsRequest {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.DurationFilterMillis = v, -1
		return req
	}
	for v := int16(0); v <= 2; v++ {
		if got := ids(b.do(list(v))); !slices.Equal(got, []string{"empty", "ongoing"}) {
			t.Errorf("v%d: %v", v, got)
		}
		byState := list(v)
		byState.StateFilters = []string{"Ongoing"}
		if got := ids(b.do(byState)); !slices.Equal(got, []string{"ongoing"}) {
			t.Errorf("v%d Ongoing: %v", v, got)
		}
		byProducer := list(v)
		byProducer.ProducerIDFilters = []int64{pid}
		if got := ids(b.do(byProducer)); !slices.Equal(got, []string{"ongoing"}) {
			t.Errorf("v%d producer %d: %v", v, pid, got)
		}
	}
	pattern := list(2)
	pattern.TransactionalIDPattern = kmsg.StringPtr("^emp.*")
	if got := ids(b.do(pattern)); !slices.Equal(got, []string{"empty"}) {
		t.Errorf("v2 ^emp.*: %v", got)
	}
	if got := ids(b.as("alice", list(2))); len(got) != 0 {
		t.Errorf("alice lists %v", fmt.Sprint(got))
	}
}
