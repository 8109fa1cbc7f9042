// Package share keeps the share-partitions and share sessions of KIP-932
// share groups on the broker that leads their topic partitions. The
// broker reads the log and writes the wire; this package only decides.
//
// A Manager holds one Partition per share-partition (a Key: group, topic
// ID and partition) and one Session per group member that fetches here.
// A Partition is the in-flight window of its topic partition, from the
// share-partition start offset (SPSO: every offset below it is
// acknowledged or archived) to the end (SPEO): for each offset its state
// (available, acquired, acknowledged, archived), how often it was
// delivered, and while acquired, which member holds it and until when.
// The contract:
//
//   - Acquire hands a member the available records of the batches the
//     broker read from NextOffset on, under a lock of Config.LockDuration;
//     NextOffset says when the window, Config.MaxLocks offsets long, has
//     nothing to hand out. Control batches and, for a read_committed
//     group, aborted ones are archived, never delivered.
//   - Acknowledge applies a member's acknowledgements all or none; a
//     record it does not hold is INVALID_RECORD_STATE. A lock that expires,
//     a released record, and every record of a member that leaves
//     (ReleaseMember, CloseSession, Manager.MemberLeft) become available
//     again, or archived once delivered Config.DeliveryLimit times. The
//     SPSO then moves past every done offset, and Changed wakes a waiting
//     ShareFetch.
//   - OpenSession checks a request's session epoch: 0 opens a session
//     (at most Config.MaxSessions), -1 is its last request, any other
//     must be the epoch the session expects.
//   - The errors of these checks are kerr values (wrapped with detail),
//     which the broker answers as they are; a Store's come back as they
//     are.
//   - The methods of Manager and Partition are safe for concurrent use. A
//     Session is used by one request at a time: Partitions reads it
//     without the Manager's lock that Update takes.
//
// With a Store (the broker's __share_group_state), Manager.Partition
// reads a share-partition's state the first time it is used here, and
// Persist writes its whole state after each change, one write at a time
// in order, before the broker answers. An acquired record is written as
// available with its delivery count (its lock dies with this leader); a
// record read back that reached the delivery limit is archived. A state
// whose start is Uninitialized (-1) was deleted: the share-partition
// starts anew under its state epoch.
//
// The share coordinator (StateCoordinator, state.go) keeps those states in
// __share_group_state, on package coordinator's runtime: it serves the
// state partitions this broker leads (fed by SetOwned, each replayed once
// per leader epoch), answers the broker's ReadShareGroupState and
// WriteShareGroupState handlers, and fences a writer whose state epoch,
// or leader epoch at the same state epoch, is older than the state's.
//
// The records, in Kafka's share-coordinator schemas (records.go), all
// integers big-endian:
//
//	key (ShareSnapshotKey v0 and ShareUpdateKey v0)
//	  int16  record type: 0 snapshot, 1 update (read, never written)
//	  int16  group length, then the group's bytes
//	  [16]byte topic ID
//	  int32  partition
//
//	value (ShareSnapshotValue v0, flexible)
//	  int16  version 0
//	  int32  snapshot epoch
//	  int32  state epoch          (not in ShareUpdateValue)
//	  int32  leader epoch
//	  int64  start offset (SPSO)
//	  int64  create time, ms      (not in ShareUpdateValue)
//	  int64  write time, ms       (not in ShareUpdateValue)
//	  uvarint batches+1, then per batch:
//	    int64 first offset, int64 last offset,
//	    int8 delivery state (0 available, 2 acknowledged, 4 archived),
//	    int16 delivery count, uvarint 0 (no tagged fields)
//	  tagged fields: tag 0, 4 bytes: int32 delivery-complete count
//	  (how many offsets in flight are done; absent: unknown)
package share
