package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record versions written: the key is TransactionLogKey v0, the value
// TransactionLogValue v1 (flexible, with KIP-890's tagged fields), as Kafka
// 4 writes them.
const (
	keyVersion   = 0
	valueVersion = 1
)

func recordKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

func recordValue(m *txnMeta) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = m.pid
	v.ProducerEpoch = m.epoch
	v.TimeoutMillis = m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp = m.updateMs
	v.StartTimestamp = m.startMs
	v.PreviousProducerID = m.prevPid
	v.ClientTransactionVersion = int16(max(m.tv, TV1))
	v.NextProducerID = m.nextPid
	var last *kmsg.TxnMetadataValueTopic
	for _, tp := range m.sortedPartitions() {
		if last == nil || last.Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			last = &v.Topics[len(v.Topics)-1]
		}
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	if v.Topics == nil && m.state != Ongoing && m.state != PrepareCommit && m.state != PrepareAbort {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
	}
	return v.AppendTo(nil)
}

// parseKey is the transactional id of a record key; a key of another
// version is skipped (ok false).
func parseKey(key []byte) (id string, ok bool, err error) {
	if len(key) < 2 {
		return "", false, fmt.Errorf("__transaction_state key of %d bytes", len(key))
	}
	if v := int16(key[0])<<8 | int16(key[1]); v != keyVersion {
		return "", false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", false, fmt.Errorf("__transaction_state key: %w", err)
	}
	return k.TransactionalID, true, nil
}

func parseValue(id string, value []byte) (*txnMeta, error) {
	var v kmsg.TxnMetadataValue
	v.Default()
	if err := v.ReadFrom(value); err != nil {
		return nil, fmt.Errorf("__transaction_state value: %w", err)
	}
	if v.Version > valueVersion {
		return nil, fmt.Errorf("__transaction_state value version %d", v.Version)
	}
	m := &txnMeta{
		id:         id,
		pid:        v.ProducerID,
		prevPid:    v.PreviousProducerID,
		epoch:      v.ProducerEpoch,
		lastEpoch:  noEpoch,
		timeoutMs:  v.TimeoutMillis,
		state:      State(v.State),
		partitions: map[TopicPartition]struct{}{},
		startMs:    v.StartTimestamp,
		updateMs:   v.LastUpdateTimestamp,
		tv:         int8(min(max(v.ClientTransactionVersion, 0), 127)),
		nextPid:    v.NextProducerID,
	}
	if m.state < Empty || m.state > PrepareEpochFence {
		return nil, fmt.Errorf("__transaction_state value with state %d", v.State)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return m, nil
}
