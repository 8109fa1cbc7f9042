// Package logstore stores one Kafka partition as an append-only sequence of
// segments, the way Apache Kafka does, and keeps Kafka's v2 record batches
// byte for byte as producers sent them (compressed batches stay
// compressed), unless the topic's compression.type names another codec.
//
// # Directory layout
//
// A partition lives in one directory (conventionally "topic-N"):
//
//	00000000000000000000.log        segment: record batches, back to back
//	00000000000000000000.index      sparse offset index of that segment
//	00000000000000000000.timeindex  sparse time index of that segment
//	00000000000000004711.log        next segment, named by its base offset
//	00000000000000004711.index
//	00000000000000004711.timeindex
//	00000000000000004711.txnindex   aborted transactions whose ABORT marker is in that segment (if any)
//	00000000000000004711.snapshot   producer state as of offset 4711
//	leader-epoch-checkpoint         leader epochs (Kafka's text format)
//	log-start-offset                checkpoint: first readable offset
//	recovery-point                  checkpoint: segments below it are fsynced
//	cleaner-offset-checkpoint       checkpoint: Compact cleaned below it
//	.clean-shutdown                 marker: written by Close, removed by Open
//
// Segment names are the base offset (the offset of the first batch in the
// segment) in 20 decimal digits. The active (last) segment receives appends;
// it rolls when it would exceed segment.bytes, when its first batch is older
// than segment.ms, when its index is full, or when a relative offset would
// overflow 32 bits; and, as Kafka's retention does, when retention would
// delete it (DeleteLocalSegments: tiered storage's local retention, once
// every segment before it is copied and deleted).
//
// # Segment file (.log)
//
// Batches are stored verbatim with their offsets assigned (the broker
// rewrites BaseOffset and PartitionLeaderEpoch, and MaxTimestamp/attributes
// for LogAppendTime, before the write):
//
//	+--------------------------- one v2 record batch ---------------------------+
//	| baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic=2 |
//	| crc uint32 (CRC-32C of attributes..end) | attributes int16                  |
//	| lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64            |
//	| producerId int64 | producerEpoch int16 | baseSequence int32 | count int32   |
//	| records ... (possibly compressed)                                           |
//	+-----------------------------------------------------------------------------+
//	| next batch ...
//
// # Offset index (.index)
//
// Sparse: one 8-byte entry about every index.interval.bytes of log, always
// at a batch boundary; entries ascend in both fields. Lookups binary-search
// the largest entry at or below the wanted offset (or position) and scan
// batch headers forward from there.
//
//	+---------------------------+---------------------------+
//	| relativeOffset uint32 (BE) | filePosition uint32 (BE)  |   batch base offset - segment base
//	+---------------------------+---------------------------+
//
// # Time index (.timeindex)
//
// Sparse: 12-byte entries appended together with offset index entries when
// the largest timestamp seen so far grew; its last entry is the segment's
// largest timestamp (written when the segment is sealed or the log closed).
//
//	+--------------------------+---------------------------+
//	| timestamp int64 (BE)     | relativeOffset uint32 (BE) |   base of the batch that first reached it
//	+--------------------------+---------------------------+
//
// Index files are written when a segment is sealed and on Close; while a
// segment is active its index lives in memory. A crash therefore loses only
// index entries that recovery rebuilds anyway. Indexes of older segments
// are read into memory on first use.
//
// # Recovery
//
// Close writes the index files, a producer snapshot and the checkpoints,
// fsyncs every file written since its last fsync (each file and the
// directory keep a dirty flag; an idle log costs no fsync), fsyncs the
// directory once if its entries changed, and creates the .clean-shutdown
// marker last, itself not fsynced: everything it vouches for is durable
// before it exists, and a marker lost to a power failure only costs a
// recovery scan. Open trusts a
// directory with the marker (it only reads the index files and the batch
// headers after the active segment's last index entry) and removes the
// marker. Without it, Open scans every segment from the one holding the
// recovery point onwards batch by batch (header sanity, length within the
// file, ascending offsets, CRC-32C), truncates at the first bad or torn
// byte (dropping any later segment), rebuilds those indexes, truncates the
// leader-epoch cache to the new end, and rebuilds the producer state from
// the newest usable snapshot plus the batch headers after it. Missing or
// inconsistent index files of older segments are rebuilt when first used.
//
// # Transactions
//
// The producer state also tracks each producer's open transaction (from
// its first transactional batch to its COMMIT or ABORT control batch,
// appended with AppendMarker) and is snapshotted with it, so a restart or
// a follower that becomes leader knows every open transaction.
// LastStableOffset(hw) is the first offset of the oldest transaction that
// is open, or whose marker is not yet below hw; read_committed reads stop
// there. An ABORT marker adds a 34-byte entry to its segment's .txnindex
// (Kafka's format, see txnindex.go); AbortedTxns answers Fetch from them.
// Recovery and truncation rebuild the state and the entries from the
// snapshot and the batches after it; the entries go with their segment.
//
// # Compaction
//
// Compact is Kafka's log cleaner for one log: in the sealed segments below
// the high watermark each key keeps only its latest record, at its own
// offset, so a compacted log has gaps between offsets (readers, followers
// and recovery allow them). A batch that loses records is re-encoded with
// its base offset, last offset delta, producer fields, leader epoch and
// codec; a producer's last batch stays whole. A cleaned segment is written
// to <base>.log.tmp, fsynced, and renamed over the old .log under the
// append lock, after the old index files are removed; its new indexes are
// written after the rename. A crash leaves the old or the new file, with
// matching indexes or none (rebuilt on use). Transactions follow Kafka's
// cleaner (compact_txn.go): a pass stops at the last stable offset,
// removes aborted transactions' records, and drops a marker only once
// nothing of its transaction is left and delete.retention.ms has passed;
// the cleaned segment's .txnindex keeps the entries still needed.
//
// # Storage failures
//
// Every file operation goes through Config.FS (OS by default; FaultFS
// injects faults in tests). A failed write, fsync, create, rename or
// removal of what the log needs to stay correct — the segment's bytes, a
// roll, the log start offset and leader epoch checkpoints, a compacted
// segment's rename — fails the Log, as a Kafka log directory goes offline
// on an IOException: the operation returns an error wrapping ErrStorage
// (and the cause, such as syscall.ENOSPC), Log.Failed reports it, and
// Config.OnFailure is called once. A failed log refuses appends,
// truncations, retention, compaction, epoch assignment and flushes (an
// fsync is never retried after a failed one) until it is closed and opened
// again; its Close writes no clean-shutdown marker, so the next Open
// recovers. Bytes of a failed append are cut off again when possible, and
// are never published either way: readers stop at the end offset, and
// recovery cuts a torn tail. Files that are only an optimisation — index
// files rebuilt for a read, the producer snapshot and the recovery point
// written after a roll or flush, the cleaner checkpoint — do not fail the
// log: they are written again later, and losing them costs only a longer
// recovery. At Close any failure leaves out the clean-shutdown marker.
//
// # Reads, and the seam for remote data
//
// Read answers with regions, not bytes: Log.Read with file ranges of its
// segments (Region.File), which the broker sends with sendfile(2), so
// record bytes never enter user space on the local path. A Region can
// instead hold bytes (File nil, Bytes set), and protocol encodes both kinds
// into a Fetch response alike (sendfile for file ranges where the
// connection allows it, a plain write for bytes), even mixed in one
// response. That is the seam for data not held in local files: a
// SegmentSource is anything with Log.Read's method and contract, and one
// over remote segments (tiered storage: an object store read through a
// chunk cache) builds its results with NewReadResult from bytes regions
// that point into its cached chunks, pinned until the result's release
// runs. Nothing of that is built here: Log is the only SegmentSource, and
// the fetch path (broker, protocol, replication) sees only ReadResults.
//
// # Concurrency
//
// A Log has one appender at a time (an internal mutex). Readers never take
// it: the log end offset and each segment's size are published atomically
// after the bytes are written, and reads return file ranges (for sendfile)
// that stay valid until ReadResult.Release even if retention deletes the
// segment meanwhile (segments are reference counted; a deleted segment's
// file is unlinked at once and closed on its last release).
package logstore
