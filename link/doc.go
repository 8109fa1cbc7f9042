// Package link runs samsa's cluster links (issue 29): it mirrors topics
// of another Kafka cluster (Apache Kafka, samsa, anything that speaks the
// protocol) into this one at the offsets they have there.
//
// A link is a named config in etcd (controller.EntityLinks, parsed by
// ParseSpec): the source's bootstrap servers and client security, which
// topics and groups. The controller broker looks at the source every
// metadata.refresh.interval.ms (Discover) and creates a mirror topic for
// each new match, with the source's partition count, after writing its
// mirror record (controller.EntityMirrors) so that no produce lands on it.
//
// Each mirror partition is copied by its leader in this cluster, so that
// the mirror's own replicas, ISR and acks work as for any topic: the
// broker hands the Manager the mirror partitions it leads (Assign), and
// for each a goroutine fetches from the source partition's leader with
// the Fetch API (read_uncommitted, as a consumer: never past the source's
// high watermark), from the mirror's log end offset, and appends what
// comes back verbatim at the same offsets through the Sink (the broker:
// replication.ReplicaManager.AppendMirrored). A source leader change or
// a dead source broker means a new Metadata look-up and a fetch from the
// same offset: no gap, no duplicate, since the offset is the mirror's own
// end. The goroutine of a partition stops when its leadership here ends
// (the epoch it was given is fenced) and when the mirror reaches its
// promote target. The partitions that one source broker leads fetch
// together, in one request and one KIP-227 fetch session with it
// (fetcher.go).
//
// A source whose offsets went back (an unclean election, a topic deleted
// and created again) stops the partition with an error; nothing is
// appended past a gap that the source did not leave. Divergence is told
// by the source's leader epochs (epochs.go): after a source leader
// change, and while the source's high watermark is below the mirror's
// end, the mirror asks where the source's log ends for the epoch of its
// last batch; when a partition starts here it compares its last batch
// with the source's at that offset.
package link
