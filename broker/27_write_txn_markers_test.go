package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnMarker is one marker of producer pid at epoch (coordinator epoch
// coordEpoch, transaction version tv) on partition 0 of each topic.
func txnMarker(pid int64, epoch int16, coordEpoch int32, tv int8, topics ...string) kmsg.WriteTxnMarkersRequestMarker {
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, m.TransactionVersion = pid, epoch, coordEpoch, true, tv
	for _, topic := range topics {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, rt)
	}
	return m
}

func writeTxnMarkersRequest(v int16, markers ...kmsg.WriteTxnMarkersRequestMarker) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version, req.Markers = v, markers
	return req
}

// markerCode is the code of the first partition of the first marker.
func markerCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
}

// WriteTxnMarkers v1-v2: a COMMIT marker ends the producer's open
// transaction (the last stable offset moves past it). Only v2 carries the
// transaction version, and at version 2 a marker's producer epoch must be
// newer than the open transaction's (INVALID_PRODUCER_EPOCH), where v1
// takes the same epoch; an older coordinator epoch is
// TRANSACTION_COORDINATOR_FENCED; an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION; two markers of one producer are answered as
// one. alice gets CLUSTER_AUTHORIZATION_FAILED on each partition until she
// may ClusterAction the cluster.
func TestWriteTxnMarkersHandler(t *testing.T) {
	b, pid, epoch := startTxnBroker(t, "wm", "wm2")
	b.addToTxn("tx", pid, epoch, "wm")
	b.produceTxn("wm", pid, epoch, 0, "open")

	wantCode(t, "v2 at the transaction's epoch", markerCode(b.do(writeTxnMarkersRequest(2, txnMarker(pid, epoch, 5, 2, "wm")))), kerr.InvalidProducerEpoch)
	b.waitStable("wm", 0, 1)
	wantCode(t, "v1 at the transaction's epoch", markerCode(b.do(writeTxnMarkersRequest(1, txnMarker(pid, epoch, 5, 0, "wm")))), nil)
	b.waitStable("wm", 2, 2)
	wantCode(t, "an older coordinator epoch", markerCode(b.do(writeTxnMarkersRequest(1, txnMarker(pid, epoch, 4, 0, "wm")))), kerr.TransactionCoordinatorFenced)
	wantCode(t, "v2, a newer epoch", markerCode(b.do(writeTxnMarkersRequest(2, txnMarker(pid, epoch+1, 5, 2, "wm")))), nil)

	unknown := txnMarker(pid, epoch+1, 5, 2, "nope", "wm")
	unknown.Topics[1].Partitions = []int32{1}
	resp := b.do(writeTxnMarkersRequest(2, unknown)).(*kmsg.WriteTxnMarkersResponse)
	for _, rt := range resp.Markers[0].Topics {
		wantCode(t, rt.Topic+" unknown", rt.Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	}

	resp = b.do(writeTxnMarkersRequest(2, txnMarker(pid+1, 0, 0, 2, "wm"), txnMarker(pid+1, 0, 0, 2, "wm2"))).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 2 {
		t.Fatalf("two markers of one producer: answered %+v, want one marker of two topics", resp.Markers)
	}
	for _, rt := range resp.Markers[0].Topics {
		wantCode(t, "one producer's "+rt.Topic, rt.Partitions[0].ErrorCode, nil)
	}

	b.wantAuthz(writeTxnMarkersRequest(2, txnMarker(pid+2, 0, 0, 2, "wm")), markerCode,
		authzStep{want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationAlter)}, want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationClusterAction)}})
}
