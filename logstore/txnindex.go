package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// The aborted-transaction index of a segment, <base>.txnindex, in Kafka's
// format (TransactionIndex/AbortedTxn): one 34-byte entry per ABORT marker
// in the segment that ended a non-empty transaction, in marker order, big
// endian:
//
//	+---------------+------------------+--------------------+-------------------+------------------------+
//	| version int16 | producerId int64 | firstOffset int64  | lastOffset int64  | lastStableOffset int64 |
//	|  (0)          |                  | of the transaction | the ABORT marker  | once it completed      |
//	+---------------+------------------+--------------------+-------------------+------------------------+
//
// The entries live in memory with their segment (read from the file when
// the log opens); an abort appends to the file at once, recovery and
// truncation rewrite it from the log, and it goes with its segment.

const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

// AbortedTxn is one aborted transaction: its producer, its first offset,
// the offset of its ABORT marker, and the last stable offset right after
// it completed.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

func appendAbortedTxn(b []byte, e AbortedTxn) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, txnIndexVersion)
	b = be.AppendUint64(b, uint64(e.ProducerID))
	b = be.AppendUint64(b, uint64(e.FirstOffset))
	b = be.AppendUint64(b, uint64(e.LastOffset))
	return be.AppendUint64(b, uint64(e.LastStableOffset))
}

// errCorruptTxnIndex: a .txnindex that is not whole entries of version 0.
var errCorruptTxnIndex = errors.New("logstore: corrupt transaction index")

// ParseTxnIndex decodes a .txnindex file (tiered storage reads remote
// copies with it). It returns the whole entries
// before the first fault, and an error wrapping errCorruptTxnIndex for a
// torn last entry or an unknown version (Kafka refuses the file then).
func ParseTxnIndex(b []byte) ([]AbortedTxn, error) {
	be := binary.BigEndian
	out := make([]AbortedTxn, 0, len(b)/txnIndexEntrySize)
	for len(b) >= txnIndexEntrySize {
		if v := be.Uint16(b); v != txnIndexVersion {
			return out, fmt.Errorf("%w: entry %d has version %d", errCorruptTxnIndex, len(out), v)
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(be.Uint64(b[2:])),
			FirstOffset:      int64(be.Uint64(b[10:])),
			LastOffset:       int64(be.Uint64(b[18:])),
			LastStableOffset: int64(be.Uint64(b[26:])),
		})
		b = b[txnIndexEntrySize:]
	}
	if len(b) != 0 {
		return out, fmt.Errorf("%w: %d trailing bytes", errCorruptTxnIndex, len(b))
	}
	return out, nil
}

func (s *segment) txnIndexPath() string { return segmentName(s.dir, s.base, txnIndexSuffix) }

// loadTxnIndex reads the segment's .txnindex, if any. A torn or unknown
// file keeps its whole leading entries and reports the error: the caller
// rebuilds it from the log.
func (s *segment) loadTxnIndex() error {
	b, err := readFile(s.fs, s.txnIndexPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	aborted, err := ParseTxnIndex(b)
	s.mu.Lock()
	s.aborted = aborted
	s.mu.Unlock()
	return err
}

// addAborted appends an entry to the segment's index and its file.
// Caller holds the append lock.
func (s *segment) addAborted(e AbortedTxn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.fs.OpenFile(s.txnIndexPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("segment %d: transaction index: %w", s.base, err)
	}
	_, err = f.WriteAt(appendAbortedTxn(nil, e), int64(len(s.aborted))*txnIndexEntrySize)
	if err == nil {
		// A longer file (entries of a log cut since) must not outlive
		// this entry.
		err = f.Truncate(int64(len(s.aborted)+1) * txnIndexEntrySize)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.idxDirty.Store(true)
	if err != nil {
		return fmt.Errorf("segment %d: transaction index: %w", s.base, err)
	}
	s.aborted = append(s.aborted, e)
	return nil
}

// dropAbortedFrom forgets the entries whose marker is at or after offset
// (their batches are cut, or about to be replayed) and rewrites the file.
// Caller holds the append lock.
func (s *segment) dropAbortedFrom(offset int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := len(s.aborted)
	for keep > 0 && s.aborted[keep-1].LastOffset >= offset {
		keep--
	}
	if keep == len(s.aborted) {
		return nil
	}
	s.aborted = s.aborted[:keep:keep]
	return s.writeTxnIndexLocked()
}

// writeTxnIndexLocked replaces the file with the entries in memory (none:
// no file). Caller holds s.mu.
func (s *segment) writeTxnIndexLocked() error {
	if len(s.aborted) == 0 {
		if err := s.fs.Remove(s.txnIndexPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b := make([]byte, 0, len(s.aborted)*txnIndexEntrySize)
	for _, e := range s.aborted {
		b = appendAbortedTxn(b, e)
	}
	return writeFileAtomic(s.fs, s.txnIndexPath(), b)
}

// collectAborted appends to out the segment's entries for transactions
// with records in [from, upper); done reports an entry whose last stable
// offset reaches upper: no later segment holds one that overlaps.
func (s *segment) collectAborted(out []AbortedTxn, from, upper int64) ([]AbortedTxn, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.aborted {
		if e.LastOffset >= from && e.FirstOffset < upper {
			out = append(out, e)
		}
		if e.LastStableOffset >= upper {
			return out, true
		}
	}
	return out, false
}
