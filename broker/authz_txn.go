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

// The declarations of the transaction APIs.
var (
	azProduce = &access{needs: []need{txnIDOp(security.OpWrite), topicOp(security.OpWrite)},
		check: (*Broker).authzProduce, inHandler: true} // the topics' Write in the handler
	azInitProducerID = &access{needs: []need{txnIDOp(security.OpWrite), clusterOp(security.OpIdempotentWrite), topicOp(security.OpWrite)},
		check: (*Broker).authzInitProducerID, inHandler: true} // an idempotent producer's in the handler (authz.go)
	azAddOffsetsToTxn    = &access{needs: []need{txnIDOp(security.OpWrite), groupOp(security.OpRead)}, check: (*Broker).authzAddOffsetsToTxn}
	azEndTxn             = &access{needs: []need{txnIDOp(security.OpWrite)}, check: (*Broker).authzEndTxn}
	azTxnOffsetCommit    = &access{needs: []need{txnIDOp(security.OpWrite), groupOp(security.OpRead), topicOp(security.OpRead)}, check: (*Broker).authzTxnOffsetCommit}
	azAddPartitionsToTxn = &access{needs: []need{txnIDOp(security.OpWrite), clusterOp(security.OpClusterAction), topicOp(security.OpWrite)},
		check: (*Broker).authzAddPartitionsToTxn}
	azWriteTxnMarkers      = &access{needs: []need{clusterOp(security.OpClusterAction)}, clusterPass: security.OpClusterAction, check: (*Broker).authzWriteTxnMarkers}
	azDescribeTransactions = &access{needs: []need{txnIDOp(security.OpDescribe), topicOp(security.OpDescribe)}, check: (*Broker).authzDescribeTransactions}
	azListTransactions     = &access{needs: []need{txnIDOp(security.OpDescribe)}, check: (*Broker).authzListTransactions}
)

// txnAuthorizationFailure is TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
var txnAuthorizationFailure = kerr.TransactionalIDAuthorizationFailed.Code

func (b *Broker) authzProduce(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.ProduceRequest)
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
		rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.ProduceRequestTopicPartition) kmsg.ProduceResponseTopicPartition {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, txnAuthorizationFailure
			return rp
		})
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) authzInitProducerID(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	if req.TransactionalID == nil || b.mayTxn(r, security.OpWrite, *req.TransactionalID) {
		return nil, nil
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = txnAuthorizationFailure, -1, -1
	return resp, nil
}

func (b *Broker) authzAddOffsetsToTxn(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !b.mayTxn(r, security.OpWrite, req.TransactionalID):
		resp.ErrorCode = txnAuthorizationFailure
	case !b.may(r, security.OpRead, security.ResourceGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		return nil, nil
	}
	return resp, nil
}

func (b *Broker) authzEndTxn(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.EndTxnRequest)
	if b.mayTxn(r, security.OpWrite, req.TransactionalID) {
		return nil, nil
	}
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = txnAuthorizationFailure, -1, -1
	return resp, nil
}

func (b *Broker) authzTxnOffsetCommit(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.TxnOffsetCommitRequest)
	code := int16(0)
	switch {
	case !b.mayTxn(r, security.OpWrite, req.TransactionalID):
		code = txnAuthorizationFailure
	case !b.may(r, security.OpRead, security.ResourceGroup, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	}
	answer := func(c int16) func(kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
		return func(t kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.TxnOffsetCommitRequestTopicPartition) kmsg.TxnOffsetCommitResponseTopicPartition {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, c
				return rp
			})
			return rt
		}
	}
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		resp.Topics = refusedPartitions(req.Topics, answer(code))
		return resp, nil
	}
	mayRead := b.mayOn(r, security.OpRead, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return mayRead(t.Topic) },
		answer(kerr.TopicAuthorizationFailed.Code),
		func(tr *kmsg.TxnOffsetCommitResponse) *[]kmsg.TxnOffsetCommitResponseTopic { return &tr.Topics })
}

func (b *Broker) authzWriteTxnMarkers(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p int32) kmsg.WriteTxnMarkersResponseMarkerTopicPartition {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				return rp
			})
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (b *Broker) authzDescribeTransactions(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DescribeTransactionsRequest)
	refused := filterMerge(&req.TransactionalIDs, func(id string) bool { return b.mayTxn(r, security.OpDescribe, id) },
		func(id string) kmsg.DescribeTransactionsResponseTransactionState {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, txnAuthorizationFailure
			return s
		},
		func(dr *kmsg.DescribeTransactionsResponse) *[]kmsg.DescribeTransactionsResponseTransactionState {
			return &dr.TransactionStates
		})
	return nil, both(func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeTransactionsResponse)
		for i := range dr.TransactionStates {
			s := &dr.TransactionStates[i]
			s.Topics = keepIf(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return b.may(r, security.OpDescribe, security.ResourceTopic, t.Topic)
			})
		}
	}, refused)
}

func (b *Broker) authzListTransactions(r *request) (kmsg.Response, authzMerge) {
	return nil, func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListTransactionsResponse)
		lr.TransactionStates = keepIf(lr.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return b.mayTxn(r, security.OpDescribe, s.TransactionalID)
		})
	}
}

// authzAddPartitionsToTxn: v0-3 (a client) needs Write on the
// transactional id; v4+ (a broker verifying a produce) ClusterAction. Then
// Write on each topic: when one is refused nothing is added, the refused
// partitions get TOPIC_AUTHORIZATION_FAILED and the others
// OPERATION_NOT_ATTEMPTED.
func (b *Broker) authzAddPartitionsToTxn(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.hdr.Version >= 4 {
		if !b.mayCluster(r, security.OpClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		refusal := func(tx kmsg.AddPartitionsToTxnRequestTransaction) ([]kmsg.AddPartitionsToTxnResponseTopic, bool) {
			in := make([]kmsg.AddPartitionsToTxnRequestTopic, len(tx.Topics))
			for i, t := range tx.Topics {
				in[i].Topic, in[i].Partitions = t.Topic, t.Partitions
			}
			return b.txnTopicsRefusal(r, in, 0)
		}
		return nil, filterMerge(&req.Transactions, func(tx kmsg.AddPartitionsToTxnRequestTransaction) bool {
			_, ok := refusal(tx)
			return ok
		}, func(tx kmsg.AddPartitionsToTxnRequestTransaction) kmsg.AddPartitionsToTxnResponseTransaction {
			topics, _ := refusal(tx)
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = tx.TransactionalID
			for _, t := range topics {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = t.Topic
				tt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.AddPartitionsToTxnResponseTopicPartition) kmsg.AddPartitionsToTxnResponseTransactionTopicPartition {
					tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					tp.Partition, tp.ErrorCode = p.Partition, p.ErrorCode
					return tp
				})
				rt.Topics = append(rt.Topics, tt)
			}
			return rt
		}, func(ar *kmsg.AddPartitionsToTxnResponse) *[]kmsg.AddPartitionsToTxnResponseTransaction {
			return &ar.Transactions
		})
	}
	code := int16(0)
	if !b.mayTxn(r, security.OpWrite, req.TransactionalID) {
		code = txnAuthorizationFailure
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
