package groups

// CommittedOffsets calls fn with every committed offset of every live
// group coordinated here (the broker's consumer lag metrics), and returns
// how many such groups there are. fn runs with a shard's lock held: it
// must not call the Coordinator.
func (c *Coordinator) CommittedOffsets(fn func(group, topic string, partition int32, offset int64)) int {
	shards, _ := c.activeShards()
	n := 0
	for _, s := range shards {
		s.mu.Lock()
		for id, g := range s.groups {
			if !live(g) {
				continue
			}
			n++
			for tp, o := range g.core().offsets {
				fn(id, tp.topic, tp.partition, o.offset)
			}
		}
		s.mu.Unlock()
	}
	return n
}
