package logstore

import "errors"

// Errors returned by the partition log (the batch-level errors such as
// ErrInvalidRecord and ErrCorruptMessage live in batch.go). The broker maps
// them to Kafka error codes; wrapped errors keep them reachable with errors.Is.
var (
	// ErrOffsetOutOfRange: a read below the log start offset or past the log
	// end offset, or DeleteRecordsBefore past the end (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrBelowLocalLog: a read at or above the log start offset but below
	// the first local segment, which tiered storage deleted once it was
	// copied (see Config.RemoteStorage): the offset is remote.
	ErrBelowLocalLog = errors.New("logstore: offset below the local log")
	// ErrMessageTooLarge: one batch is larger than max.message.bytes
	// (MESSAGE_TOO_LARGE).
	ErrMessageTooLarge = errors.New("logstore: batch larger than max.message.bytes")
	// ErrRecordListTooLarge: the records of one append are larger than a
	// whole segment (RECORD_LIST_TOO_LARGE).
	ErrRecordListTooLarge = errors.New("logstore: records larger than segment.bytes")
	// ErrInvalidTimestamp: a CreateTime batch outside
	// message.timestamp.before.max.ms / after.max.ms (INVALID_TIMESTAMP).
	ErrInvalidTimestamp = errors.New("logstore: timestamp out of the accepted range")
	// ErrUnexpectedOffset: a follower append whose batches do not ascend
	// from the log end offset.
	ErrUnexpectedOffset = errors.New("logstore: batch offset not above the log end offset")
	// ErrClosed: the log was closed or deleted.
	ErrClosed = errors.New("logstore: log closed")
	// ErrStorage wraps an I/O failure of the log's files (KAFKA_STORAGE_ERROR).
	// After a failed write the log refuses further appends until reopened.
	ErrStorage = errors.New("logstore: storage error")
)
