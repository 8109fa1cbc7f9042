package logstore

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC32C table used by v2 record batches (and by the
// producer-state snapshot). hash/crc32 uses the SSE4.2 / ARMv8 CRC
// instructions for this polynomial when the CPU has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcStart is the first byte covered by a batch's CRC: the attributes field.
const crcStart = 21

// BatchCRC computes the CRC32C of a v2 batch: from the attributes field to
// the end of b. b must hold at least BatchHeaderSize bytes; a shorter b
// yields 0.
func BatchCRC(b []byte) uint32 {
	if len(b) < BatchHeaderSize {
		return 0
	}
	return crc32.Checksum(b[crcStart:], castagnoli)
}

// CheckBatchCRC reports whether b, one whole v2 batch (len(b) ==
// 12+batchLength), carries a correct CRC. It is the cheap integrity check
// for batches read back from disk (recovery): header sanity, the length
// field matching len(b), and the CRC, without decoding records.
// Errors: ErrCorruptBatch (short, length mismatch), ErrInvalidRecord
// (magic != 2), ErrCorruptMessage (CRC mismatch).
func CheckBatchCRC(b []byte) error {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return err
	}
	if h.Magic != 2 {
		return errMagic(h.Magic)
	}
	if h.Length < batchLengthMin || h.Size() != int64(len(b)) {
		return ErrCorruptBatch
	}
	if BatchCRC(b) != h.CRC {
		return ErrCorruptMessage
	}
	return nil
}

// putCRC recomputes and stores the CRC of the whole batch b.
func putCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:21], BatchCRC(b))
}
