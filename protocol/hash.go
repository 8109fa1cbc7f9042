package protocol

import "unicode/utf16"

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over the UTF-16 code units of s, in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// CoordinatorPartition is the partition of a coordinator's topic that holds
// key (a group in __consumer_offsets, a transactional id in
// __transaction_state), as Kafka computes it: Utils.abs(key.hashCode) %
// partitions, where Utils.abs maps Integer.MIN_VALUE to 0.
func CoordinatorPartition(key string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	h := javaStringHash(key)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
