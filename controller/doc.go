// Package controller keeps samsa's cluster metadata in etcd, the way Kafka
// kept it in ZooKeeper before KRaft: broker registrations bound to leases,
// topic ids, replica assignments, partition leader/ISR states, topic config
// overrides, producer-id blocks and the controller election. It imports
// etcd's client (and, for StartEmbedded, etcd's server) and no Kafka type;
// the broker maps its errors to Kafka error codes.
//
// # Key layout
//
// Prefix defaults to "/samsa". The cluster id is created once, by the first
// broker that opens the prefix, and every other key lives under
// <prefix>/<cluster-id>, so several clusters can share an etcd. Values are
// JSON in the form Kafka wrote to ZooKeeper.
//
//	<prefix>/cluster_id
//	    {"version":"1","id":"<22-char base64url uuid>"}
//	<prefix>/<cluster-id>/brokers/ids/<id>                         lease-bound
//	    {"version":5,"host":"h","port":9092,"jmx_port":-1,"timestamp":"<unix ms>",
//	     "endpoints":["PLAINTEXT://h:9092"],
//	     "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"rack":"r","features":{}}
//	<prefix>/<cluster-id>/brokers/registered/<id>                  the same, without a lease:
//	                                                               kept while the broker is down
//	                                                               (fenced), until UnregisterBroker
//	<prefix>/<cluster-id>/brokers/topics/<topic>
//	    {"version":3,"topic_id":"<base64url uuid>","partitions":{"0":[1,2],"1":[2,1]},
//	     "adding_replicas":{},"removing_replicas":{}}
//	<prefix>/<cluster-id>/brokers/topics/<topic>/partitions/<p>/state
//	    {"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}
//	<prefix>/<cluster-id>/config/topics/<topic>
//	    {"version":1,"config":{"retention.ms":"1000"}}
//	<prefix>/<cluster-id>/config/users/<url-escaped user>           SCRAM credentials (entities.go)
//	    {"version":1,"config":{"SCRAM-SHA-256":"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096",
//	                           "producer_byte_rate":"1048576"}}    and quotas; <default> for the default
//	<prefix>/<cluster-id>/config/clients/<url-escaped client id>     quotas
//	<prefix>/<cluster-id>/config/user-clients/<esc(esc user)/esc(client)>  quotas of a user's client id
//	<prefix>/<cluster-id>/config/groups/<url-escaped group>      group configs (GROUP resource)
//	    {"version":1,"config":{"consumer.session.timeout.ms":"50000"}}
//	<prefix>/<cluster-id>/config/cluster-links/<link>             cluster links (links.go)
//	    {"version":1,"config":{"source.bootstrap.servers":"h:9092","topics":"orders.*","state":"active"}}
//	<prefix>/<cluster-id>/config/mirror-topics/<topic>            mirror topics (links.go)
//	    {"version":1,"config":{"link":"l","state":"promoting","targets":"0:120,1:98","done":"0"}}
//	<prefix>/<cluster-id>/delegation_token/tokens/<token id>        delegation tokens (tokens.go)
//	    {"version":3,"tokenId":"<id>","owner":"User:alice","tokenRequester":"User:alice",
//	     "renewers":[],"issueTimestamp":<ms>,"maxTimestamp":<ms>,"expiryTimestamp":<ms>}
//	<prefix>/<cluster-id>/admin/delete_topics/<topic>               deletion marker (reserved)
//	<prefix>/<cluster-id>/controller/<lease-id>                    election (concurrency.Election);
//	    {"version":1,"brokerid":1,"timestamp":"<unix ms>"}          the oldest key is the controller
//	<prefix>/<cluster-id>/controller_epoch
//	    1                                                          decimal, +1 per won election
//	<prefix>/<cluster-id>/latest_producer_id_block
//	    {"version":1,"broker":1,"block_start":"0","block_end":"999"}
//	<prefix>/<cluster-id>/remote_log/<base64url topic id>/<p>     tiered storage's remote log
//	    {"version":1,...}   (tiered.Metadata, opaque here)        metadata, written by the leader
//	                                                               fenced on its leader epoch
//
// # Consistency
//
// Every write that depends on what was read is a transaction conditioned on
// a revision (ZooKeeper's versioned write): CreateTopic on the absence of
// the topic and its deletion marker, AddPartitions and UpdateTopicConfig on
// the topic's and config's revisions, UpdatePartitionState on the state's
// revision (PartitionState.Version), producer-id blocks on the block key's
// revision, the controller epoch on the epoch's revision and on the
// election key, a partition's remote log metadata on its own revision and
// on the partition state's (whose leader and leader epoch the writer
// names: a deposed leader writes nothing). A lost race is ErrStale (or an internal retry where a retry
// is always right); nothing overwrites blindly. Holding the election is not
// proof of being alone (Jepsen, etcd 3.4.3): controller writes must be
// fenced too.
//
// A topic is created in one transaction of partitions+2 operations. The
// embedded etcd allows 65536 operations and 10 MiB requests; an external
// one 128 by default (--max-txn-ops). Past that limit the first transaction
// holds the topic key and as many states as fit, and the other states
// follow in transactions fenced on the topic key's create revision:
// readers may briefly see partitions without a state (Leader -1, Version
// 0). Running an external etcd with a higher --max-txn-ops avoids that.
//
// # Liveness
//
// A Store holds one lease (TTL Config.SessionTTL, default 10s) kept alive
// by a goroutine. The broker registration and the controller candidacy are
// bound to it: Close revokes it, a crash lets it expire. If the lease is
// lost while the process lives (etcd unreachable for longer than the TTL),
// the store takes a new one and registers the broker again; the
// controllership is lost (ControllerDone closes). The lost lease is revoked
// (retried until etcd no longer has it): a restarted etcd restores leases
// with a fresh TTL, and the old one would hold the registration and the
// candidacy. A new lease lost before the broker registered with it is
// replaced in turn.
//
// Brokers keep a metadata cache: read Topics (which returns the etcd
// revision) and call WatchTopics from that revision; on each (coalesced)
// callback read Topics again. A compacted or broken watch calls back too.
//
// # Controller
//
// Every broker runs RunController: it campaigns, and the elected one keeps
// the partitions led. When a broker's registration goes (its lease
// expired: dead, paused or cut off), the partitions it led get a new
// leader from the live members of their ISR, with the leader epoch bumped,
// and it leaves the ISRs it was in; a partition with no live ISR member
// goes offline (leader -1, ISR kept) unless unclean.leader.election.enable
// lets any live replica lead. With auto.leader.rebalance.enable, preferred
// replicas (the first of each assignment) that are live and in sync get
// their partitions back; ElectLeaders does the same on demand. Each of its
// writes is a transaction conditioned on its election key and on the
// state's revision (writeStateFenced): a controller that lost its lease
// changes nothing, whatever it believes. The partition leaders change the
// ISR themselves (UpdatePartitionState, revision-conditioned), as in
// Kafka. AssignReplicas places replicas, rack-aware when brokers have
// racks.
//
// # Embedded etcd
//
// StartEmbedded runs a one-member etcd in-process on 127.0.0.1 with free
// ports picked at each start (none are persisted), for `samsa serve`
// without etcd endpoints and for tests. It starts in well under a second
// and logs only etcd's warnings and errors, through slog.
package controller
