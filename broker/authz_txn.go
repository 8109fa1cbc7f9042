package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

// The transaction APIs' authorization (authz_apis.go has the list), as
// KafkaApis checks them: TRANSACTIONAL_ID_AUTHORIZATION_FAILED without
// Write on the transactional id, before anything else.

func (b *Broker) mayTxn(r *request, op security.Operation, id string) bool {
	return b.may(r, op, security.ResourceTransactionalID, id)
}

func (b *Broker) authorizeTxnRequest(r *request) (kmsg.Response, authzMerge) {
	txnCode := kerr.TransactionalIDAuthorizationFailed.Code
	switch req := r.body.(type) {
	case *kmsg.ProduceRequest:
		if req.TransactionID == nil || b.mayTxn(r, security.OpWrite, *req.TransactionID) {
			return nil, nil
		}
		if req.Acks == 0 {
			return nil, nil // the handler's topic checks answer nothing either
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, txnCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.InitProducerIDRequest:
		if req.TransactionalID == nil || b.mayTxn(r, security.OpWrite, *req.TransactionalID) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = txnCode, -1, -1
		return resp, nil
	case *kmsg.AddOffsetsToTxnRequest:
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !b.mayTxn(r, security.OpWrite, req.TransactionalID):
			resp.ErrorCode = txnCode
		case !b.may(r, security.OpRead, security.ResourceGroup, req.Group):
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			return nil, nil
		}
		return resp, nil
	case *kmsg.EndTxnRequest:
		if b.mayTxn(r, security.OpWrite, req.TransactionalID) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = txnCode, -1, -1
		return resp, nil
	case *kmsg.TxnOffsetCommitRequest:
		code := int16(0)
		switch {
		case !b.mayTxn(r, security.OpWrite, req.TransactionalID):
			code = txnCode
		case !b.may(r, security.OpRead, security.ResourceGroup, req.Group):
			code = kerr.GroupAuthorizationFailed.Code
		}
		var refused []kmsg.TxnOffsetCommitResponseTopic
		all := code != 0
		req.Topics = keepIf(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool {
			c := code
			if !all {
				if b.may(r, security.OpRead, security.ResourceTopic, t.Topic) {
					return true
				}
				c = kerr.TopicAuthorizationFailed.Code
			}
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, c
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			return false
		})
		if all {
			resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			resp.Topics = refused
			return resp, nil
		}
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			tr := resp.(*kmsg.TxnOffsetCommitResponse)
			tr.Topics = append(tr.Topics, refused...)
		})
	case *kmsg.AddPartitionsToTxnRequest:
		return b.authzAddPartitionsToTxn(r, req)
	case *kmsg.WriteTxnMarkersRequest:
		if b.mayCluster(r, security.OpClusterAction) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return resp, nil
	case *kmsg.DescribeTransactionsRequest:
		var refused []kmsg.DescribeTransactionsResponseTransactionState
		req.TransactionalIDs = keepIf(req.TransactionalIDs, func(id string) bool {
			if b.mayTxn(r, security.OpDescribe, id) {
				return true
			}
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, txnCode
			refused = append(refused, s)
			return false
		})
		return nil, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DescribeTransactionsResponse)
			for i := range dr.TransactionStates {
				s := &dr.TransactionStates[i]
				s.Topics = keepIf(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
					return b.may(r, security.OpDescribe, security.ResourceTopic, t.Topic)
				})
			}
			dr.TransactionStates = append(dr.TransactionStates, refused...)
		}
	case *kmsg.ListTransactionsRequest:
		return nil, func(resp kmsg.Response) {
			lr := resp.(*kmsg.ListTransactionsResponse)
			lr.TransactionStates = keepIf(lr.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
				return b.mayTxn(r, security.OpDescribe, s.TransactionalID)
			})
		}
	}
	return nil, nil
}

// authzAddPartitionsToTxn: v0-3 (a client) needs Write on the
// transactional id; v4+ (a broker verifying a produce) ClusterAction. Then
// Write on each topic: when one is refused nothing is added, the refused
// partitions get TOPIC_AUTHORIZATION_FAILED and the others
// OPERATION_NOT_ATTEMPTED.
func (b *Broker) authzAddPartitionsToTxn(r *request, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, authzMerge) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.hdr.Version >= 4 {
		if !b.mayCluster(r, security.OpClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		var refused []kmsg.AddPartitionsToTxnResponseTransaction
		req.Transactions = keepIf(req.Transactions, func(tx kmsg.AddPartitionsToTxnRequestTransaction) bool {
			in := make([]kmsg.AddPartitionsToTxnRequestTopic, len(tx.Topics))
			for i, t := range tx.Topics {
				in[i].Topic, in[i].Partitions = t.Topic, t.Partitions
			}
			topics, ok := b.txnTopicsRefusal(r, in, 0)
			if ok {
				return true
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = tx.TransactionalID
			for _, t := range topics {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = t.Topic
				for _, p := range t.Partitions {
					tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					tp.Partition, tp.ErrorCode = p.Partition, p.ErrorCode
					tt.Partitions = append(tt.Partitions, tp)
				}
				rt.Topics = append(rt.Topics, tt)
			}
			refused = append(refused, rt)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			ar := resp.(*kmsg.AddPartitionsToTxnResponse)
			ar.Transactions = append(ar.Transactions, refused...)
		})
	}
	code := int16(0)
	if !b.mayTxn(r, security.OpWrite, req.TransactionalID) {
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	topics, ok := b.txnTopicsRefusal(r, req.Topics, code)
	if ok {
		return nil, nil
	}
	resp.Topics = topics
	return resp, nil
}

// txnTopicsRefusal answers every partition of topics with code (when not
// 0), else checks Write on each topic; ok when all may be added.
func (b *Broker) txnTopicsRefusal(r *request, topics []kmsg.AddPartitionsToTxnRequestTopic, code int16) ([]kmsg.AddPartitionsToTxnResponseTopic, bool) {
	refusedTopic := func(name string) bool {
		return !isInternalTopic(name) && !b.may(r, security.OpWrite, security.ResourceTopic, name)
	}
	if code == 0 {
		ok := true
		for _, t := range topics {
			if refusedTopic(t.Topic) {
				ok = false
			}
		}
		if ok {
			return nil, true
		}
	}
	var out []kmsg.AddPartitionsToTxnResponseTopic
	for _, t := range topics {
		c := code
		if c == 0 {
			c = kerr.OperationNotAttempted.Code
			if refusedTopic(t.Topic) {
				c = kerr.TopicAuthorizationFailed.Code
			}
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, c
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, false
}
