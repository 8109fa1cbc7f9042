package chaos

import (
	"strings"
	"testing"
)

// TestClaimRunKeepsRunsApart: a second run on the machine while the first
// holds its number gets another number, and so other names and another
// subnet; the first number is free again once its run ends.
func TestClaimRunKeepsRunsApart(t *testing.T) {
	var first, second int
	var firstPrefix, firstSubnet string
	t.Run("first", func(t *testing.T) {
		claimRun(t)
		first, firstPrefix, firstSubnet = runN, prefix, subnet
		t.Run("second", func(t *testing.T) {
			claimRun(t)
			second = runN
			if second == first || prefix == firstPrefix || subnet == firstSubnet {
				t.Errorf("two runs at once share run %d (prefixes %q and %q, subnets %s and %s)",
					first, firstPrefix, prefix, firstSubnet, subnet)
			}
			if strings.HasPrefix(nodeNS(1), firstPrefix) || etcdIP == firstSubnet+".10" {
				t.Errorf("run %d's names %s, %s are the first run's", second, nodeNS(1), etcdIP)
			}
		})
	})
	t.Run("again", func(t *testing.T) {
		claimRun(t)
		if runN > first { // the lowest free number: first, or a lower one freed since
			t.Errorf("run number %d free again, but got %d", first, runN)
		}
	})
}
