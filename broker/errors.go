package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/replication"
)

var (
	errNotLeader          = replication.ErrNotLeader
	errFencedLeaderEpoch  = replication.ErrFencedLeaderEpoch
	errUnknownLeaderEpoch = replication.ErrUnknownLeaderEpoch
	errTimeout            = errors.New("broker: request timed out")
)

// errCode maps an error from any layer to its Kafka error code.
func errCode(err error) int16 {
	var ke *kerr.Error
	if code, ok := telemetryErrCode(err); ok {
		return code
	}
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, errNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, errFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, errUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, errTimeout):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, logstore.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, logstore.ErrBelowLocalLog):
		return kerr.OffsetMovedToTieredStorage.Code
	case errors.Is(err, logstore.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, logstore.ErrRecordListTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, logstore.ErrCorruptMessage):
		return kerr.CorruptMessage.Code
	case errors.Is(err, logstore.ErrInvalidRecord), errors.Is(err, logstore.ErrCorruptBatch):
		return kerr.InvalidRecord.Code
	case errors.Is(err, logstore.ErrStorage):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, logstore.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, logstore.ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, logstore.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, logstore.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, logstore.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, logstore.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, logstore.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, controller.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, controller.ErrUnknownTopic), errors.Is(err, controller.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, controller.ErrInvalid):
		return kerr.InvalidRequest.Code
	case errors.Is(err, controller.ErrStale):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, config.ErrUnknownConfig), errors.Is(err, config.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	}
	return kerr.UnknownServerError.Code
}

// errMsg is the message sent with an error code, where the API has one.
func errMsg(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
