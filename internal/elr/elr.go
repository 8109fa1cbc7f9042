// Package elr holds the rules of KIP-966's eligible leader replicas
// (ELR), which the controller and a partition's leader both apply when
// they write a partition's ISR.
//
// While a partition's ISR holds at least its min.insync.replicas, its ELR
// is empty. When the ISR shrinks below that, the replicas that leave it
// join the ELR: the high watermark does not advance while the ISR is
// below min.insync.replicas, so each of them holds every committed
// record, and may be elected leader once the ISR is empty. A replica
// whose broker shut down uncleanly (it may have lost an unflushed tail)
// leaves the ELR.
package elr

import "slices"

// EffectiveMinISR is the min.insync.replicas a partition of replicas
// replicas is held to: at least 1, at most the replication factor (as
// Kafka's Partition.effectiveMinIsr and the controller's
// getTopicEffectiveMinIsr).
func EffectiveMinISR(minISR, replicas int) int {
	return max(1, min(minISR, replicas))
}

// Next is the ELR a partition has once its ISR goes from isr to target,
// its ELR having been elr (Kafka 4.4's PartitionChangeBuilder): empty
// when target holds at least minISR replicas; else the replicas of isr
// and elr that are not in target, without those for which unclean
// (nil: none) reports an unclean shutdown. The result is sorted, and nil
// when empty.
func Next(isr, elr, target []int32, minISR int, unclean func(int32) bool) []int32 {
	if len(target) >= minISR {
		return nil
	}
	var out []int32
	add := func(r int32) {
		if slices.Contains(target, r) || slices.Contains(out, r) || unclean != nil && unclean(r) {
			return
		}
		out = append(out, r)
	}
	for _, r := range isr {
		add(r)
	}
	for _, r := range elr {
		add(r)
	}
	slices.Sort(out)
	return out
}
