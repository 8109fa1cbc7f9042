package protocol

import "testing"

// The expected values were computed outside this package: the hashes with
// Python over UTF-16 code units in 32-bit two's complement (and "test" and
// "polygenelubricants" are well-known Java String.hashCode values: 3556498
// and Integer.MIN_VALUE), the partitions as abs(hash) % 50 with Kafka's
// Utils.abs (MIN_VALUE maps to 0).
func TestCoordinatorPartitionMatchesJavaHashCode(t *testing.T) {
	cases := []struct {
		group     string
		hash      int32
		partition int32
	}{
		{"my-group", -1906497762, 12},
		{"console-consumer-12345", 158455506, 6},
		{"connect-cluster", 1440343063, 13},
		{"test", 3556498, 48},
		{"", 0, 0},
		{"groupé", -1237460406, 6},
		{"😀grp", 1276929186, 36}, // a surrogate pair in UTF-16
		{"polygenelubricants", -2147483648, 0},
	}
	for _, c := range cases {
		if h := javaStringHash(c.group); h != c.hash {
			t.Errorf("javaStringHash(%q) = %d, want %d", c.group, h, c.hash)
		}
		if p := CoordinatorPartition(c.group, 50); p != c.partition {
			t.Errorf("CoordinatorPartition(%q, 50) = %d, want %d", c.group, p, c.partition)
		}
	}
}
