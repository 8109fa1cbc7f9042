package broker

// DescribeTransactions v0: the state of transactional ids this broker
// coordinates; NOT_COORDINATOR for the others, TRANSACTIONAL_ID_NOT_FOUND
// for ids it does not know.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDescribeTransactions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		d, err := b.txn.Describe(id)
		if err != nil {
			st.ErrorCode = errCode(err)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		for _, tp := range d.Partitions {
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			t := &st.Topics[len(st.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
