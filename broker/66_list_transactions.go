package broker

// ListTransactions v0-v2: the transactional ids this broker coordinates,
// filtered by state and producer id; v1: by duration (KIP-994, running
// longer than DurationFilterMillis); v2: by a regular expression over the
// id (KIP-1152; Go's RE2 syntax, which covers the common Java patterns).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/txn"
)

func (b *Broker) handleListTransactions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters, MinDuration: -1}
	if req.Version >= 1 {
		f.MinDuration = req.DurationFilterMillis
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.Pattern = re
	}
	list, unknown, err := b.txn.List(f)
	resp.UnknownStateFilters = unknown
	resp.ErrorCode = errCode(err)
	for _, l := range list {
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.ID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
