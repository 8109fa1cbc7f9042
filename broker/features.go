package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// feature is one feature flag (KIP-584) as ApiVersions reports it: the
// levels this broker supports and the level finalized in the cluster.
// Clients switch wire behaviour on a finalized level (kgo and the Java
// client use transaction.version 2 for KIP-890's TV2), so a row is added
// only with the behaviour it announces.
type feature struct {
	name               string
	minLevel, maxLevel int16 // supported
	finalized          int16 // 0: not finalized, so not reported as such
}

// features is the table ApiVersions and the Java Admin's describeFeatures
// (which reads ApiVersions) see. Every broker of a cluster runs the same
// table, so the finalized levels are the cluster's.
var features = []feature{
	// eligible.leader.replicas.version 1: KIP-966's eligible leader
	// replicas, as Kafka 4.1 and later finalize them on a new cluster.
	{name: "eligible.leader.replicas.version", minLevel: 0, maxLevel: 1, finalized: 1},
	// group.version 1: the KIP-848 consumer group protocol is served.
	{name: "group.version", minLevel: 0, maxLevel: 1, finalized: 1},
	// share.version 2: KIP-932 share groups are served, as Kafka 4.4
	// finalizes them.
	{name: "share.version", minLevel: 0, maxLevel: 2, finalized: 2},
	// streams.version 1: KIP-1071 streams groups are served, as Kafka 4.4
	// finalizes them.
	{name: "streams.version", minLevel: 0, maxLevel: 1, finalized: 1},
	// transaction.version 2: KIP-890 part 2 (EndTxn v5 bumps the epoch,
	// Produce v12 and TxnOffsetCommit v5 add partitions implicitly). A
	// client of TV1 (EndTxn v4 or older) still gets the TV1 flow.
	{name: "transaction.version", minLevel: 0, maxLevel: 2, finalized: 2},
}

// featuresEpoch is the epoch of the finalized levels: Kafka's is the
// metadata offset of their last change, and a client keeps the levels of
// the highest epoch it has seen. The sum of the finalized levels grows
// with every row added or level raised, which is what that comparison
// needs; -1 (none finalized) leaves the field out.
func featuresEpoch() int64 {
	var e int64
	for _, f := range features {
		e += int64(f.finalized)
	}
	if e == 0 {
		return -1
	}
	return e
}

// addFeatures fills the feature fields of an ApiVersions response. Before
// v4 a supported range starting at 0 is left out (KAFKA-17492: older Java
// clients reject it), as Kafka does.
func addFeatures(resp *kmsg.ApiVersionsResponse) {
	resp.FinalizedFeaturesEpoch = featuresEpoch()
	for _, f := range features {
		if resp.Version >= 4 || f.minLevel > 0 {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.minLevel, f.maxLevel
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
		if f.finalized > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.finalized, f.finalized
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
}
