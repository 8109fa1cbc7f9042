package controller

import "context"

// Cluster links (issue 29) are entity configs of two kinds:
//
//	/config/cluster-links/<link>   the link: source.bootstrap.servers, the
//	                               source's client properties (source.*),
//	                               topics, groups, state (active|paused)
//	/config/mirror-topics/<topic>  a mirror topic: link, state
//	                               (mirroring|promoting|promoted|failed),
//	                               error, and while promoting the source
//	                               offsets to reach (targets) and the
//	                               partitions that reached them (done)
//
// A mirror topic's key is written before the topic is created, so that no
// produce ever lands on a mirror; it is updated with UpdateEntityConfig
// (a transaction conditioned on the revision read), so that the mirror
// leaders of a topic being promoted each mark their partition done
// without losing another's mark.
const (
	EntityLinks   = "cluster-links"
	EntityMirrors = "mirror-topics"
)

// WatchLinks is WatchTopics for the cluster links and mirror topics.
func (s *Store) WatchLinks(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.entityPrefix(EntityLinks), s.entityPrefix(EntityMirrors))
}
