package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Def describes one property: its name, Kafka's type, default (nil for
// Kafka's null) and documentation line.
type Def struct {
	Name      string
	Type      kmsg.ConfigType
	Default   *string
	Doc       string
	Dynamic   bool // Kafka can change it at run time (DescribeConfigs reports readOnly = !Dynamic)
	Sensitive bool
	Ignored   bool                 // samsa accepts it and does not act on it
	check     func(v string) error // run on the trimmed value once it parses as Type
}

const (
	tBool   = kmsg.ConfigTypeBoolean
	tString = kmsg.ConfigTypeString
	tInt    = kmsg.ConfigTypeInt
	tShort  = kmsg.ConfigTypeShort
	tLong   = kmsg.ConfigTypeLong
	tDouble = kmsg.ConfigTypeDouble
	tList   = kmsg.ConfigTypeList
	tClass  = kmsg.ConfigTypeClass
)

const (
	maxLong = "9223372036854775807"
	maxInt  = "2147483647"
)

// DefaultLogDir is samsa's default log.dir: a directory under the system's
// temporary directory, as Kafka's is /tmp/kafka-logs.
var DefaultLogDir = filepath.Join(os.TempDir(), "samsa-logs")

func str(v string) *string { return &v }

// ignoredNote ends the documentation of a property samsa accepts (so that
// configurations written for Kafka start unchanged) but does not act on.
const ignoredNote = " (samsa: accepted and ignored.)"

// kraftProps are acted on only when etcd.endpoints is empty (see Quorum);
// otherwise they are accepted and ignored.
var kraftProps = map[string]bool{"process.roles": true, "controller.quorum.voters": true, "controller.quorum.bootstrap.servers": true}

// brokerDefs is the table of broker properties, in no particular order.
var brokerDefs = []Def{
	// Identity and roles.
	{Name: "node.id", Type: tInt, Default: str("1"), Doc: "The node id of this broker. samsa's default is 1 (Kafka requires it). broker.id is an alias; if both are set they must agree.", check: atLeast(0)},
	{Name: "broker.id", Type: tInt, Default: str("-1"), Doc: "Alias of node.id. -1 (the default) means: use node.id.", check: atLeast(-1)},
	{Name: "process.roles", Type: tList, Default: str(""), Doc: "The roles of this process, as in KRaft mode: with controller (and controller.quorum.voters), the process runs a member of the etcd cluster formed by the voters; with broker only, it is a client of the voters' etcd. Ignored when etcd.endpoints is set.", check: listIn("broker", "controller")},
	{Name: "controller.quorum.voters", Type: tList, Default: str(""), Doc: "The controller quorum, id@host:port,...: the members of the etcd cluster samsa keeps its metadata in, each reached on its controller listener (etcd's peer and client traffic share that port). Ignored when etcd.endpoints is set.", check: checkVoters},
	{Name: "controller.quorum.bootstrap.servers", Type: tList, Default: str(""), Doc: "host:port,... of the controllers, when controller.quorum.voters is not set: a broker-only node uses them as etcd endpoints; a controller accepts a single one (a standalone controller, itself). Ignored when etcd.endpoints is set.", check: checkBootstrapServers},
	{Name: "controller.listener.names", Type: tList, Default: nil, Doc: "Listener names used by the controller: on a node whose process.roles includes controller, the first of these found in listeners carries the embedded etcd member's traffic; they are never served as Kafka listeners."},
	{Name: "cluster.id", Type: tString, Default: nil, Ignored: true, Doc: "The cluster id (the apache/kafka image reads it from CLUSTER_ID)."},
	{Name: "broker.rack", Type: tString, Default: nil, Doc: "Rack of the broker, returned in Metadata responses."},

	// Listeners.
	{Name: "listeners", Type: tList, Default: str("PLAINTEXT://127.0.0.1:9092"), Dynamic: true, Doc: "Comma-separated listener URIs NAME://host:port. An empty host binds every interface; port 0 picks a free port. samsa's default is PLAINTEXT://127.0.0.1:9092 (Kafka's is PLAINTEXT://:9092).", check: checkListeners},
	{Name: "advertised.listeners", Type: tList, Default: nil, Dynamic: true, Doc: "Listeners published to clients, when different from listeners. If unset, listeners are advertised, with 127.0.0.1 for an empty or 0.0.0.0 host.", check: checkAdvertised},
	{Name: "listener.security.protocol.map", Type: tString, Default: str("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"), Dynamic: true, Doc: "Map from listener name to security protocol, NAME:PROTOCOL,...", check: checkProtocolMap},
	{Name: "inter.broker.listener.name", Type: tString, Default: nil, Doc: "The listener brokers use to reach each other. Defaults to the first listener."},
	{Name: "security.inter.broker.protocol", Type: tString, Default: str("PLAINTEXT"), Doc: "Security protocol between brokers.", check: oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")},

	// Storage.
	{Name: "log.dir", Type: tString, Default: &DefaultLogDir, Doc: "The directory of the log data, used when log.dirs is not set."},
	{Name: "log.dirs", Type: tList, Default: nil, Doc: "Comma-separated directories of the log data. If unset, log.dir is used. Embedded etcd keeps its data under the first one.", check: checkDirs},
	{Name: "cordoned.log.dirs", Type: tList, Default: str(""), Dynamic: true, Doc: "Log directories that take no new partitions (KIP-1066): entries of log.dirs, or * for all of them. A broker whose every directory is cordoned is given no new replicas; the partitions it has stay."},
	{Name: "metadata.log.dir", Type: tString, Default: nil, Ignored: true, Doc: "The KRaft metadata log directory."},
	{Name: "num.partitions", Type: tInt, Default: str("1"), Doc: "The default number of partitions of a new topic.", check: atLeast(1)},
	{Name: "default.replication.factor", Type: tInt, Default: str("1"), Doc: "The default replication factor of a new topic.", check: atLeast(1)},
	{Name: "auto.create.topics.enable", Type: tBool, Default: str("true"), Doc: "Create a topic when a client asks for its metadata."},
	{Name: "delete.topic.enable", Type: tBool, Default: str("true"), Doc: "Allow deleting topics."},
	{Name: "log.segment.bytes", Type: tInt, Default: str("1073741824"), Dynamic: true, Doc: "The maximum size of one log segment file.", check: atLeast(14)},
	{Name: "log.roll.ms", Type: tLong, Default: nil, Dynamic: true, Doc: "The maximum time before a new segment is rolled, in milliseconds. If unset, log.roll.hours is used."},
	{Name: "log.roll.hours", Type: tInt, Default: str("168"), Dynamic: true, Doc: "The maximum time before a new segment is rolled, in hours; secondary to log.roll.ms.", check: atLeast(1)},
	{Name: "log.roll.jitter.ms", Type: tLong, Default: nil, Dynamic: true, Ignored: true, Doc: "The maximum jitter subtracted from the roll time, in milliseconds. If unset, log.roll.jitter.hours is used."},
	{Name: "log.roll.jitter.hours", Type: tInt, Default: str("0"), Dynamic: true, Ignored: true, Doc: "The maximum jitter subtracted from the roll time, in hours; secondary to log.roll.jitter.ms.", check: atLeast(0)},
	{Name: "log.retention.ms", Type: tLong, Default: nil, Dynamic: true, Doc: "How long to keep a log segment, in milliseconds; -1 for no limit. If unset, log.retention.minutes is used."},
	{Name: "log.retention.minutes", Type: tInt, Default: nil, Dynamic: true, Doc: "How long to keep a log segment, in minutes; secondary to log.retention.ms. If unset, log.retention.hours is used."},
	{Name: "log.retention.hours", Type: tInt, Default: str("168"), Dynamic: true, Doc: "How long to keep a log segment, in hours; tertiary to log.retention.ms."},
	{Name: "log.retention.bytes", Type: tLong, Default: str("-1"), Dynamic: true, Doc: "The maximum size of a partition's log before old segments are deleted; -1 for no limit."},
	{Name: "log.retention.check.interval.ms", Type: tLong, Default: str("300000"), Doc: "How often the broker checks whether a log has segments to delete.", check: atLeast(1)},
	{Name: "log.cleanup.policy", Type: tList, Default: str("delete"), Dynamic: true, Doc: "The default cleanup policy of segments beyond the retention window: delete, compact or both.", check: listIn("compact", "delete")},
	{Name: "log.cleaner.enable", Type: tBool, Default: str("true"), Doc: "Run the log cleaner (compaction)."},
	{Name: "log.cleaner.backoff.ms", Type: tLong, Default: str("15000"), Doc: "How long the log cleaner sleeps when no log needs cleaning.", check: atLeast(0)},
	{Name: "log.cleaner.dedupe.buffer.size", Type: tLong, Default: str("134217728"), Doc: "Memory for the cleaner's key map of one pass (samsa counts 64 bytes a key: a Go map of 16-byte key hashes to offsets).", check: atLeast(0)},
	{Name: "log.cleaner.threads", Type: tInt, Default: str("1"), Dynamic: true, Ignored: true, Doc: "Number of log cleaner threads. samsa runs one cleaner.", check: atLeast(0)},
	{Name: "log.cleaner.delete.retention.ms", Type: tLong, Default: str("86400000"), Dynamic: true, Doc: "How long delete tombstones are kept in compacted topics.", check: atLeast(0)},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: tLong, Default: str("0"), Dynamic: true, Doc: "The minimum time a message stays uncompacted.", check: atLeast(0)},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: tLong, Default: str(maxLong), Dynamic: true, Ignored: true, Doc: "The maximum time a message stays ineligible for compaction.", check: atLeast(1)},
	{Name: "log.cleaner.min.cleanable.ratio", Type: tDouble, Default: str("0.5"), Dynamic: true, Doc: "The minimum ratio of dirty log to total log for a log to be compacted.", check: between(0, 1)},
	{Name: "log.segment.delete.delay.ms", Type: tLong, Default: str("60000"), Dynamic: true, Ignored: true, Doc: "How long to wait before deleting a segment file from the file system. samsa deletes segment files at once.", check: atLeast(0)},
	{Name: "log.preallocate", Type: tBool, Default: str("false"), Dynamic: true, Ignored: true, Doc: "Preallocate the file of a new segment."},
	{Name: "log.index.interval.bytes", Type: tInt, Default: str("4096"), Dynamic: true, Doc: "The interval in bytes at which an entry is added to the offset index.", check: atLeast(0)},
	{Name: "log.index.size.max.bytes", Type: tInt, Default: str("10485760"), Dynamic: true, Doc: "The maximum size in bytes of the offset index.", check: atLeast(4)},
	{Name: "log.flush.interval.messages", Type: tLong, Default: str(maxLong), Dynamic: true, Doc: "The number of messages written to a partition before it is flushed to disk.", check: atLeast(1)},
	{Name: "log.flush.interval.ms", Type: tLong, Default: nil, Dynamic: true, Doc: "The maximum time a message waits before it is flushed to disk. If unset, log.flush.scheduler.interval.ms is used."},
	{Name: "log.flush.scheduler.interval.ms", Type: tLong, Default: str(maxLong), Doc: "How often the flusher checks whether a log needs flushing."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: tInt, Default: str("60000"), Ignored: true, Doc: "How often the recovery point is recorded.", check: atLeast(0)},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: tInt, Default: str("60000"), Ignored: true, Doc: "How often the log start offset is recorded.", check: atLeast(0)},
	{Name: "log.message.timestamp.type", Type: tString, Default: str("CreateTime"), Dynamic: true, Doc: "Whether record timestamps are the producer's CreateTime or the broker's LogAppendTime.", check: oneOf("CreateTime", "LogAppendTime")},
	{Name: "log.message.timestamp.before.max.ms", Type: tLong, Default: str(maxLong), Dynamic: true, Doc: "How far in the past a CreateTime timestamp may be, relative to the broker's clock.", check: atLeast(0)},
	{Name: "log.message.timestamp.after.max.ms", Type: tLong, Default: str("3600000"), Dynamic: true, Doc: "How far in the future a CreateTime timestamp may be, relative to the broker's clock.", check: atLeast(0)},
	{Name: "log.local.retention.ms", Type: tLong, Default: str("-2"), Dynamic: true, Doc: "Local retention time with tiered storage; -2 means retention.ms. The default of topics' local.retention.ms: segments copied to the object store are deleted locally by it.", check: atLeast(-2)},
	{Name: "log.local.retention.bytes", Type: tLong, Default: str("-2"), Dynamic: true, Doc: "Local retention size with tiered storage; -2 means retention.bytes. The default of topics' local.retention.bytes: segments copied to the object store are deleted locally by it.", check: atLeast(-2)},
	{Name: "remote.log.storage.system.enable", Type: tBool, Default: str("false"), Doc: "Enable tiered storage (KIP-405) on the broker: topics may then set remote.storage.enable=true. Needs remote.log.storage.manager.class.name " + AivenRSMClass + " with its S3 backend, configured by rsm.config.* as that plugin is."},
	{Name: "remote.log.storage.manager.class.name", Type: tString, Default: nil, Doc: "The RemoteStorageManager plugin; samsa implements " + AivenRSMClass + " (Aiven's tiered-storage-for-apache-kafka) with its S3 backend."},
	{Name: "remote.log.storage.manager.impl.prefix", Type: tString, Default: str(rsmPrefix), Doc: "The prefix of the RemoteStorageManager's properties; samsa reads them under rsm.config. only."},
	{Name: "remote.fetch.max.wait.ms", Type: tInt, Default: str("500"), Dynamic: true, Doc: "How long a fetch waits for records read from the object store before it answers without them.", check: atLeast(1)},
	{Name: "remote.log.manager.task.interval.ms", Type: tLong, Default: str("30000"), Doc: "How often the remote log manager copies rolled segments to the object store and deletes expired remote ones."},
	{Name: "remote.log.manager.copy.max.bytes.per.second", Type: tLong, Default: str(maxLong), Dynamic: true, Doc: "The broker's byte rate of segment copies to the object store; over it a partition's copy waits before its next segment.", check: atLeast(1)},
	{Name: "remote.log.manager.copy.quota.window.num", Type: tInt, Default: str("11"), Doc: "How many windows the copy byte rate is measured over.", check: atLeast(1)},
	{Name: "remote.log.manager.copy.quota.window.size.seconds", Type: tInt, Default: str("1"), Doc: "The length of each window the copy byte rate is measured over.", check: atLeast(1)},
	{Name: "remote.log.manager.fetch.max.bytes.per.second", Type: tLong, Default: str(maxLong), Dynamic: true, Doc: "The broker's byte rate of reads from the object store; over it a fetch of remote offsets is answered without records.", check: atLeast(1)},
	{Name: "remote.log.manager.fetch.quota.window.num", Type: tInt, Default: str("11"), Doc: "How many windows the remote fetch byte rate is measured over.", check: atLeast(1)},
	{Name: "remote.log.manager.fetch.quota.window.size.seconds", Type: tInt, Default: str("1"), Doc: "The length of each window the remote fetch byte rate is measured over.", check: atLeast(1)},
	{Name: "remote.log.manager.copier.thread.pool.size", Type: tInt, Default: str("10"), Dynamic: true, Doc: "How many partitions the remote log manager works on at once (copies, remote retention, local retention); a partition whose object store calls hang holds up only itself.", check: atLeast(1)},
	{Name: "num.recovery.threads.per.data.dir", Type: tInt, Default: str("2"), Dynamic: true, Ignored: true, Doc: "Threads per data directory used to recover logs at start-up and flush them at shutdown. samsa opens (and recovers) the logs one at a time.", check: atLeast(1)},
	{Name: "message.max.bytes", Type: tInt, Default: str("1048588"), Dynamic: true, Doc: "The largest record batch the broker accepts (after compression).", check: atLeast(0)},
	{Name: "min.insync.replicas", Type: tInt, Default: str("1"), Dynamic: true, Doc: "The minimum number of in-sync replicas for an acks=all write to succeed.", check: atLeast(1)},
	{Name: "unclean.leader.election.enable", Type: tBool, Default: str("false"), Dynamic: true, Doc: "Allow a replica outside the ISR to become leader, at the risk of losing data."},
	{Name: "compression.type", Type: tString, Default: str("producer"), Dynamic: true, Doc: "The final compression of a topic's batches; producer keeps the producer's codec.", check: oneOf(compressionTypes...)},
	{Name: "compression.gzip.level", Type: tInt, Default: str("-1"), Dynamic: true, Ignored: true, Doc: "Compression level when compression.type is gzip. samsa compresses at the codec's default level.", check: gzipLevel},
	{Name: "compression.lz4.level", Type: tInt, Default: str("9"), Dynamic: true, Ignored: true, Doc: "Compression level when compression.type is lz4. samsa compresses at the codec's default level.", check: between(1, 17)},
	{Name: "compression.zstd.level", Type: tInt, Default: str("3"), Dynamic: true, Ignored: true, Doc: "Compression level when compression.type is zstd. samsa compresses at the codec's default level.", check: between(-131072, 22)},

	// Network.
	{Name: "socket.request.max.bytes", Type: tInt, Default: str("104857600"), Doc: "The largest request the broker reads.", check: atLeast(1)},
	{Name: "socket.send.buffer.bytes", Type: tInt, Default: str("-1"), Doc: "SO_SNDBUF of the client connections; -1 (samsa's default; Kafka's is 102400) leaves it to the kernel's autotuning, which lets a Fetch's sendfile move megabytes per wake-up instead of 200 KB."},
	{Name: "socket.receive.buffer.bytes", Type: tInt, Default: str("-1"), Doc: "SO_RCVBUF of the client connections; -1 (samsa's default; Kafka's is 102400) leaves it to the kernel's autotuning, so that a producer's window is not capped at 200 KB."},
	{Name: "socket.listen.backlog.size", Type: tInt, Default: str("50"), Ignored: true, Doc: "The listen backlog.", check: atLeast(1)},
	{Name: "connections.max.idle.ms", Type: tLong, Default: str("600000"), Doc: "Idle connections are closed after this long."},
	{Name: "num.network.threads", Type: tInt, Default: str("3"), Dynamic: true, Ignored: true, Doc: "Network threads. samsa runs a goroutine pair per connection.", check: atLeast(1)},
	{Name: "num.io.threads", Type: tInt, Default: str("8"), Dynamic: true, Ignored: true, Doc: "Request handler threads.", check: atLeast(1)},
	{Name: "background.threads", Type: tInt, Default: str("10"), Dynamic: true, Ignored: true, Doc: "Background threads.", check: atLeast(1)},
	{Name: "queued.max.requests", Type: tInt, Default: str("500"), Ignored: true, Doc: "Queued requests before the network threads stop reading.", check: atLeast(1)},
	{Name: "max.connections", Type: tInt, Default: str(maxInt), Dynamic: true, Doc: "The maximum number of client connections: past it the broker accepts no more on its client listeners until one closes (the inter-broker listener is exempt).", check: atLeast(0)},
	{Name: "max.connections.per.ip", Type: tInt, Default: str(maxInt), Dynamic: true, Doc: "The maximum number of connections from one IP address; a connection past it is closed at once (the inter-broker listener is exempt).", check: atLeast(0)},
	{Name: "max.connections.per.ip.overrides", Type: tString, Default: str(""), Dynamic: true, Doc: "host:limit,... : per-address limits instead of max.connections.per.ip, an IP address or a host name (resolved when the setting is read).", check: checkIPOverrides},
	{Name: "max.connection.creation.rate", Type: tInt, Default: str(maxInt), Dynamic: true, Doc: "The connections per second the broker accepts on its client listeners (KIP-612): past it the acceptor waits, the kernel's backlog holding the rest (the inter-broker listener is exempt).", check: atLeast(0)},
	{Name: "fetch.max.bytes", Type: tInt, Default: str("57671680"), Doc: "The maximum number of bytes a Fetch response carries.", check: atLeast(1024)},

	// Replication.
	{Name: "replica.lag.time.max.ms", Type: tLong, Default: str("30000"), Doc: "A follower that has not caught up for this long leaves the ISR."},
	{Name: "replica.fetch.max.bytes", Type: tInt, Default: str("1048576"), Doc: "Bytes a follower asks for per partition.", check: atLeast(0)},
	{Name: "replica.fetch.wait.max.ms", Type: tInt, Default: str("500"), Doc: "Maximum wait of a follower's fetch."},
	{Name: "replica.fetch.min.bytes", Type: tInt, Default: str("1"), Doc: "Minimum bytes of a follower's fetch."},
	{Name: "replica.socket.timeout.ms", Type: tInt, Default: str("30000"), Doc: "Socket timeout of follower fetches."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: tLong, Default: str("5000"), Doc: "How often the high watermark is saved to disk."},
	{Name: "num.replica.fetchers", Type: tInt, Default: str("1"), Dynamic: true, Ignored: true, Doc: "Fetcher threads per source broker."},
	{Name: "leader.replication.throttled.rate", Type: tLong, Default: str(maxLong), Dynamic: true, Doc: "The bytes per second a leader sends to followers of the replicas that leader.replication.throttled.replicas names (a reassignment's throttle); the rest of replication is not limited.", check: atLeast(1)},
	{Name: "follower.replication.throttled.rate", Type: tLong, Default: str(maxLong), Dynamic: true, Doc: "The bytes per second this broker's replica fetchers copy for the replicas that follower.replication.throttled.replicas names on it while they have not caught up (a reassignment's throttle); caught-up replicas and the rest of replication are not limited.", check: atLeast(1)},
	{Name: "replica.selector.class", Type: tString, Default: nil, Doc: "How a leader picks the replica a consumer should fetch from (KIP-392). Kafka's org.apache.kafka.common.replica.RackAwareReplicaSelector sends a consumer whose client.rack names a rack to an in-sync replica there (PreferredReadReplica), which serves it up to its high watermark; empty or LeaderSelector keeps consumers on the leader. Other classes are refused: samsa runs no Java.", check: oneOf("", rackAwareSelector, "org.apache.kafka.common.replica.LeaderSelector")},
	{Name: "auto.leader.rebalance.enable", Type: tBool, Default: str("true"), Doc: "Move leadership back to preferred replicas."},
	{Name: "leader.imbalance.check.interval.seconds", Type: tLong, Default: str("300"), Doc: "How often leader balance is checked.", check: atLeast(1)},
	{Name: "controlled.shutdown.enable", Type: tBool, Default: str("true"), Doc: "Move leadership away before shutting down: on SIGTERM the broker registers as shutting down, the controller elects another in-sync replica for each partition it leads, and the broker stops once it leads none that another replica could (at most 30 s)."},
	{Name: "broker.session.timeout.ms", Type: tInt, Default: str("9000"), Doc: "A broker whose registration is not renewed for this long is considered dead (samsa: the TTL of its etcd lease)."},
	{Name: "broker.heartbeat.interval.ms", Type: tInt, Default: str("2000"), Ignored: true, Doc: "How often a broker renews its registration. etcd's client renews the lease at a third of broker.session.timeout.ms."},
	{Name: "initial.broker.registration.timeout.ms", Type: tInt, Default: str("60000"), Doc: "How long a starting broker waits to register."},

	// Internal topics and groups.
	{Name: "offsets.topic.replication.factor", Type: tShort, Default: str("3"), Doc: "Replication factor of __consumer_offsets; creating it fails until this many brokers are up.", check: atLeast(1)},
	{Name: "offsets.topic.num.partitions", Type: tInt, Default: str("50"), Doc: "Partitions of __consumer_offsets.", check: atLeast(1)},
	{Name: "offsets.topic.segment.bytes", Type: tInt, Default: str("104857600"), Doc: "Segment size of __consumer_offsets.", check: atLeast(1)},
	{Name: "offsets.retention.minutes", Type: tInt, Default: str("10080"), Doc: "How long committed offsets of an empty group are kept.", check: atLeast(1)},
	{Name: "offsets.retention.check.interval.ms", Type: tLong, Default: str("600000"), Doc: "How often expired offsets are removed.", check: atLeast(1)},
	{Name: "offset.metadata.max.bytes", Type: tInt, Default: str("4096"), Doc: "The largest metadata string an offset commit may carry."},
	{Name: "offsets.load.buffer.size", Type: tInt, Default: str("5242880"), Ignored: true, Doc: "Bytes read at a time when loading __consumer_offsets.", check: atLeast(1)},
	{Name: "offsets.commit.timeout.ms", Type: tInt, Default: str("5000"), Doc: "How long an offset commit waits for replication.", check: atLeast(1)},
	{Name: "transaction.state.log.replication.factor", Type: tShort, Default: str("3"), Doc: "Replication factor of __transaction_state (capped by the live brokers when it is created).", check: atLeast(1)},
	{Name: "transaction.state.log.min.isr", Type: tInt, Default: str("2"), Doc: "min.insync.replicas of __transaction_state.", check: atLeast(1)},
	{Name: "transaction.state.log.num.partitions", Type: tInt, Default: str("50"), Doc: "Partitions of __transaction_state.", check: atLeast(1)},
	{Name: "transaction.state.log.segment.bytes", Type: tInt, Default: str("104857600"), Doc: "Segment size of __transaction_state.", check: atLeast(1)},
	{Name: "transaction.max.timeout.ms", Type: tInt, Default: str("900000"), Doc: "The largest transaction timeout a producer may ask for.", check: atLeast(1)},
	{Name: "transactional.id.expiration.ms", Type: tInt, Default: str("604800000"), Doc: "How long an idle transactional id is kept.", check: atLeast(1)},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: tInt, Default: str("10000"), Doc: "How often transactions past their timeout are aborted.", check: atLeast(1)},
	{Name: "transaction.partition.verification.enable", Type: tBool, Default: str("true"), Doc: "Before a transactional batch is appended, check with the transaction coordinator that its partition is in the producer's transaction (KIP-890 part 1)."},
	{Name: "add.partitions.to.txn.retry.backoff.ms", Type: tInt, Default: str("20"), Doc: "How long a partition leader waits before it asks the transaction coordinator again to add a partition that answered CONCURRENT_TRANSACTIONS (transactions version 2).", check: atLeast(1)},
	{Name: "add.partitions.to.txn.retry.backoff.max.ms", Type: tInt, Default: str("100"), Doc: "How long a partition leader keeps retrying that add before the producer gets a retriable error.", check: atLeast(0)},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: tInt, Default: str("3600000"), Doc: "How often expired transactional ids are removed.", check: atLeast(1)},
	{Name: "producer.id.expiration.ms", Type: tInt, Default: str("86400000"), Doc: "How long the state of an idle producer id is kept.", check: atLeast(1)},
	{Name: "group.initial.rebalance.delay.ms", Type: tInt, Default: str("3000"), Doc: "How long the coordinator waits for more members before the first rebalance of a new group."},
	{Name: "group.min.session.timeout.ms", Type: tInt, Default: str("6000"), Doc: "The smallest session timeout a member may ask for."},
	{Name: "group.max.session.timeout.ms", Type: tInt, Default: str("1800000"), Doc: "The largest session timeout a member may ask for."},
	{Name: "group.max.size", Type: tInt, Default: str(maxInt), Doc: "The maximum number of members of a group.", check: atLeast(1)},
	{Name: "group.coordinator.rebalance.protocols", Type: tList, Default: str("classic,consumer,streams"), Ignored: true, Doc: "The group protocols the coordinator serves. samsa serves the classic and consumer (KIP-848) protocols.", check: listIn("classic", "consumer", "share", "streams")},
	// KIP-848 consumer groups: the session timeout and heartbeat interval
	// are the group's, clamped to their min and max.
	{Name: "group.consumer.session.timeout.ms", Type: tInt, Default: str("45000"), Doc: "The timeout to detect client failures when using the consumer group protocol.", check: atLeast(1)},
	{Name: "group.consumer.min.session.timeout.ms", Type: tInt, Default: str("45000"), Doc: "The minimum allowed session timeout for registered consumers.", check: atLeast(1)},
	{Name: "group.consumer.max.session.timeout.ms", Type: tInt, Default: str("60000"), Doc: "The maximum allowed session timeout for registered consumers.", check: atLeast(1)},
	{Name: "group.consumer.heartbeat.interval.ms", Type: tInt, Default: str("5000"), Doc: "The heartbeat interval given to the members of a consumer group.", check: atLeast(1)},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: tInt, Default: str("5000"), Doc: "The minimum heartbeat interval for registered consumers.", check: atLeast(1)},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: tInt, Default: str("15000"), Doc: "The maximum heartbeat interval for registered consumers.", check: atLeast(1)},
	{Name: "group.consumer.max.size", Type: tInt, Default: str(maxInt), Doc: "The maximum number of consumers that a single consumer group can accommodate.", check: atLeast(1)},
	{Name: "group.consumer.migration.policy", Type: tString, Default: str("bidirectional"), Doc: "Whether a non-empty classic group becomes a consumer group when a member joins with the consumer protocol (upgrade), a consumer group of classic members only a classic group (downgrade), both (bidirectional) or neither (disabled); empty groups always convert.", check: oneOfFold("DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL")},
	{Name: "group.consumer.assignors", Type: tList, Default: str("uniform,range"), Doc: "The server side assignors: uniform and range (samsa runs no custom assignor class); the first is the default.", check: listIn("uniform", "range")},
	// KIP-1071 streams groups: the session timeout, heartbeat interval and
	// standby replicas are the group's (streams.* group configs), clamped
	// to their min and max; the assignment interval and warm-up tasks
	// are not implemented (accepted and ignored).
	{Name: "group.streams.session.timeout.ms", Type: tInt, Default: str("45000"), Doc: "The timeout to detect client failures when using the streams group protocol.", check: atLeast(1)},
	{Name: "group.streams.min.session.timeout.ms", Type: tInt, Default: str("45000"), Doc: "The minimum allowed value for the group-level configuration of streams.session.timeout.ms.", check: atLeast(1)},
	{Name: "group.streams.max.session.timeout.ms", Type: tInt, Default: str("60000"), Doc: "The maximum allowed value for the group-level configuration of streams.session.timeout.ms.", check: atLeast(1)},
	{Name: "group.streams.heartbeat.interval.ms", Type: tInt, Default: str("5000"), Doc: "The heartbeat interval given to the members of a streams group.", check: atLeast(1)},
	{Name: "group.streams.min.heartbeat.interval.ms", Type: tInt, Default: str("5000"), Doc: "The minimum allowed value for the group-level configuration of streams.heartbeat.interval.ms.", check: atLeast(1)},
	{Name: "group.streams.max.heartbeat.interval.ms", Type: tInt, Default: str("15000"), Doc: "The maximum allowed value for the group-level configuration of streams.heartbeat.interval.ms.", check: atLeast(1)},
	{Name: "group.streams.max.size", Type: tInt, Default: str(maxInt), Doc: "The maximum number of streams clients that a single streams group can accommodate.", check: atLeast(1)},
	{Name: "group.streams.num.standby.replicas", Type: tInt, Default: str("0"), Doc: "The number of standby replicas for each task.", check: atLeast(0)},
	{Name: "group.streams.initial.rebalance.delay.ms", Type: tInt, Default: str("3000"), Doc: "How long the coordinator waits for more streams clients to join a new group before its first assignment.", check: atLeast(0)},
	{Name: "group.streams.max.standby.replicas", Type: tInt, Default: str("2"), Doc: "The maximum allowed value for the group-level configuration of streams.num.standby.replicas.", check: atLeast(0)},
	{Name: "group.share.session.timeout.ms", Type: tInt, Default: str("45000"), Doc: "The timeout to detect client failures when using the share group protocol.", check: atLeast(1)},
	{Name: "group.share.heartbeat.interval.ms", Type: tInt, Default: str("5000"), Doc: "The heartbeat interval given to the members of a share group.", check: atLeast(1)},
	{Name: "group.share.max.size", Type: tInt, Default: str("200"), Doc: "The maximum number of members that a single share group can accommodate.", check: atLeast(1)},
	{Name: "group.share.record.lock.duration.ms", Type: tInt, Default: str("30000"), Doc: "The record acquisition lock duration in milliseconds for share groups.", check: atLeast(1000)},
	{Name: "group.share.delivery.count.limit", Type: tInt, Default: str("5"), Doc: "The maximum number of delivery attempts for a record delivered to a share group.", check: atLeast(2)},
	{Name: "group.share.partition.max.record.locks", Type: tInt, Default: str("2000"), Doc: "Share-group record lock limit per share-partition.", check: atLeast(100)},
	{Name: "group.share.max.share.sessions", Type: tInt, Default: str("2000"), Doc: "The maximum number of share sessions per broker.", check: atLeast(1)},
	{Name: "share.coordinator.state.topic.replication.factor", Type: tShort, Default: str("3"), Doc: "Replication factor of __share_group_state (capped by the live brokers when it is created).", check: atLeast(1)},
	{Name: "share.coordinator.state.topic.min.isr", Type: tShort, Default: str("2"), Doc: "min.insync.replicas of __share_group_state (at most its replication factor).", check: atLeast(1)},
	{Name: "share.coordinator.state.topic.num.partitions", Type: tInt, Default: str("50"), Doc: "The number of partitions for the share-group state topic (should not change after deployment).", check: atLeast(1)},

	// TLS listeners (security/tls.go). Each may be set per listener as
	// listener.name.<listener>.<property>.
	{Name: "ssl.keystore.type", Type: tString, Default: str("JKS"), Dynamic: true, Doc: "The keystore's format: JKS, PKCS12 or PEM.", check: oneOfFold("JKS", "PKCS12", "PEM")},
	{Name: "ssl.keystore.location", Type: tString, Default: nil, Dynamic: true, Doc: "The keystore file. Reloaded when its content changes."},
	{Name: "ssl.keystore.password", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "The keystore's password."},
	{Name: "ssl.key.password", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "The private key's password (JKS, PKCS12: defaults to the keystore's; PEM: of an encrypted PKCS#8 key)."},
	{Name: "ssl.keystore.certificate.chain", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "With ssl.keystore.type=PEM: the certificate chain, inline."},
	{Name: "ssl.keystore.key", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "With ssl.keystore.type=PEM: the private key, inline."},
	{Name: "ssl.truststore.type", Type: tString, Default: str("JKS"), Dynamic: true, Doc: "The trust store's format: JKS, PKCS12 or PEM.", check: oneOfFold("JKS", "PKCS12", "PEM")},
	{Name: "ssl.truststore.location", Type: tString, Default: nil, Dynamic: true, Doc: "The trust store file. Reloaded when its content changes."},
	{Name: "ssl.truststore.password", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "The trust store's password."},
	{Name: "ssl.truststore.certificates", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "With ssl.truststore.type=PEM: the trusted certificates, inline."},
	{Name: "ssl.client.auth", Type: tString, Default: str("none"), Dynamic: true, Doc: "Client certificates: none, requested (checked when sent) or required.", check: oneOf("required", "requested", "none")},
	{Name: "ssl.enabled.protocols", Type: tList, Default: str("TLSv1.2,TLSv1.3"), Dynamic: true, Doc: "The TLS versions served.", check: listIn("TLSv1.2", "TLSv1.3", "TLSv1.1", "TLSv1")},
	{Name: "ssl.protocol", Type: tString, Default: str("TLSv1.3"), Dynamic: true, Ignored: true, Doc: "Java's SSLContext protocol; ssl.enabled.protocols decides the versions."},
	{Name: "ssl.cipher.suites", Type: tList, Default: str(""), Dynamic: true, Doc: "The TLS 1.2 cipher suites served (IANA names); empty: Go's defaults. TLS 1.3's suites are not configurable."},
	{Name: "ssl.principal.mapping.rules", Type: tString, Default: str("DEFAULT"), Doc: "Rules mapping a client certificate's subject to the principal's name: RULE:pattern/replacement/[LU], DEFAULT."},
	{Name: "ssl.endpoint.identification.algorithm", Type: tString, Default: str("https"), Dynamic: true, Doc: "https: a broker dialling another over TLS checks its host name; empty: the chain only."},

	// SASL listeners (security/sasl.go). sasl.enabled.mechanisms may be set
	// per listener, sasl.jaas.config per listener and mechanism
	// (listener.name.<listener>.<mechanism>.sasl.jaas.config).
	{Name: "sasl.enabled.mechanisms", Type: tList, Default: str("GSSAPI"), Dynamic: true, Doc: "The SASL mechanisms served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's default, GSSAPI, is not served: set this on a SASL listener)."},
	{Name: "sasl.jaas.config", Type: tPassword, Default: nil, Dynamic: true, Sensitive: true, Doc: "The JAAS login module options: PLAIN's users (user_<name>=\"<password>\"), OAUTHBEARER's unsecuredValidator* options, and the username and password a broker authenticates with to the others."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: tString, Default: str("GSSAPI"), Dynamic: true, Doc: "The SASL mechanism a broker authenticates with to the others."},
	{Name: "connections.max.reauth.ms", Type: tLong, Default: str("0"), Doc: "On a SASL listener: the longest a session lasts before the client must authenticate again on its connection (KIP-368); 0: forever.", check: atLeast(0)},
	// OAUTHBEARER (security/oauth.go, security/jwks.go), each settable per
	// listener and mechanism (listener.name.<l>.oauthbearer.<property>).
	{Name: "sasl.server.callback.handler.class", Type: tClass, Default: nil, Doc: "OAUTHBEARER's token validator: empty for Kafka's unsecured validator (alg none; the options of the oauthbearer JAAS config), or org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler for JWTs signed by a key of sasl.oauthbearer.jwks.endpoint.url. No other class is run."},
	{Name: "sasl.oauthbearer.jwks.endpoint.url", Type: tString, Default: nil, Doc: "The JWKS (https://, http:// or file://) whose keys sign OAUTHBEARER tokens. A file is read at start; a URL is fetched at start, every sasl.oauthbearer.jwks.endpoint.refresh.ms, and at once for a key id it lacks (at most once a minute per id)."},
	{Name: "org.apache.kafka.sasl.oauthbearer.allowed.urls", Type: tList, Default: str(""), Doc: "Kafka 4's Java system property, read from -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=... in KAFKA_OPTS as well: the URLs sasl.oauthbearer.jwks.endpoint.url may name, each as written there. A JWKS URL not listed stops the broker, as in Kafka 4; the default allows none."},
	{Name: "sasl.oauthbearer.jwks.endpoint.refresh.ms", Type: tLong, Default: str("3600000"), Doc: "How old the JWKS fetched from its URL may get before a token fetches it again.", check: atLeast(0)},
	{Name: "sasl.oauthbearer.expected.audience", Type: tList, Default: str(""), Doc: "The audiences an OAUTHBEARER token's aud claim must name one of."},
	{Name: "sasl.oauthbearer.expected.issuer", Type: tString, Default: nil, Doc: "The iss an OAUTHBEARER token must have."},
	{Name: "sasl.oauthbearer.allow.unverified.audience", Type: tBool, Default: str("false"), Doc: "Accept tokens whatever their aud when sasl.oauthbearer.expected.audience is not set (else the broker does not start, as Kafka 4.4)."},
	{Name: "sasl.oauthbearer.allow.unverified.issuer", Type: tBool, Default: str("false"), Doc: "Accept tokens whatever their iss when sasl.oauthbearer.expected.issuer is not set (else the broker does not start, as Kafka 4.4)."},
	{Name: "sasl.oauthbearer.sub.claim.name", Type: tString, Default: str("sub"), Doc: "The claim naming a signed token's principal."},
	{Name: "sasl.oauthbearer.scope.claim.name", Type: tString, Default: str("scope"), Doc: "The claim holding a signed token's scope (checked well-formed)."},
	{Name: "sasl.oauthbearer.clock.skew.seconds", Type: tInt, Default: str("30"), Doc: "The leeway of a signed token's exp and nbf.", check: atLeast(0)},
	// A broker's own OAUTHBEARER login on a SASL inter-broker listener
	// (security/oauth_login.go).
	{Name: "sasl.login.callback.handler.class", Type: tClass, Default: nil, Doc: "OAUTHBEARER's login on the inter-broker listener: empty for Kafka's unsecured login (an alg none token from the JAAS config's unsecuredLogin* options), or org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler for the token at sasl.oauthbearer.token.endpoint.url."},
	{Name: "sasl.oauthbearer.token.endpoint.url", Type: tString, Default: nil, Doc: "Where a broker gets the token it logs in to the others with: a file:// holding a JWT, or an https:// (http://) token endpoint asked with the client-credentials grant (the JAAS config's clientId, clientSecret, scope); it must be in org.apache.kafka.sasl.oauthbearer.allowed.urls."},
	// Delegation tokens (broker/38_delegation_tokens.go, security/token.go).
	{Name: "delegation.token.secret.key", Type: tPassword, Default: nil, Sensitive: true, Doc: "The secret that signs delegation tokens (their HMAC, HMAC-SHA512 of the token id): the same on every broker. Unset, delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED)."},
	{Name: "delegation.token.max.lifetime.ms", Type: tLong, Default: str("604800000"), Doc: "The longest a delegation token lives, renewals included; a create request may ask for less.", check: atLeast(1)},
	{Name: "telemetry.max.bytes", Type: tInt, Default: str("1048576"), Doc: "The maximum size (after compression if compression is used) of telemetry metrics pushed from a client to the broker (KIP-714).", check: atLeast(1)},
	{Name: "delegation.token.expiry.time.ms", Type: tLong, Default: str("86400000"), Doc: "How long a delegation token is valid before it must be renewed; a renewal may ask for less.", check: atLeast(1)},
	{Name: "delegation.token.expiry.check.interval.ms", Type: tLong, Default: str("3600000"), Doc: "How often the controller removes expired delegation tokens.", check: atLeast(1)},
	{Name: "sasl.server.max.receive.size", Type: tInt, Default: str("524288"), Doc: "The largest frame read before a connection is authenticated.", check: atLeast(1)},

	// The secrets of dynamic configs (security/passwords.go): Kafka 3.x's
	// password.encoder.*, removed in Kafka 4 with ZooKeeper, whose place
	// samsa's etcd takes; stored passwords are encrypted with them.
	{Name: "password.encoder.secret", Type: tPassword, Default: nil, Sensitive: true, Doc: "The secret that encrypts the passwords of dynamic broker configs (ssl.*.password, ssl.keystore.key, sasl.jaas.config, ...) before they are stored in etcd; unset, the broker refuses to store them."},
	{Name: "password.encoder.old.secret", Type: tPassword, Default: nil, Sensitive: true, Doc: "The previous password.encoder.secret: stored passwords it encrypted still decode."},
	{Name: "password.encoder.keyfactory.algorithm", Type: tString, Default: nil, Doc: "The key derivation: PBKDF2WithHmacSHA512 when unset, PBKDF2WithHmacSHA256 or PBKDF2WithHmacSHA1.", check: oneOf("PBKDF2WithHmacSHA512", "PBKDF2WithHmacSHA256", "PBKDF2WithHmacSHA1")},
	{Name: "password.encoder.cipher.algorithm", Type: tString, Default: str("AES/CBC/PKCS5Padding"), Doc: "The cipher of stored passwords: AES/CBC/PKCS5Padding or AES/GCM/NoPadding.", check: oneOf("AES/CBC/PKCS5Padding", "AES/GCM/NoPadding")},
	{Name: "password.encoder.key.length", Type: tInt, Default: str("128"), Doc: "The AES key length in bits: 128, 192 or 256.", check: oneOf("128", "192", "256")},
	{Name: "password.encoder.iterations", Type: tInt, Default: str("4096"), Doc: "The PBKDF2 iterations.", check: between(1024, 1<<22)},

	// Client quotas (security/quota.go).
	{Name: "quota.window.num", Type: tInt, Default: str("11"), Doc: "The number of samples a client's rate is measured over.", check: atLeast(1)},
	{Name: "quota.window.size.seconds", Type: tInt, Default: str("1"), Doc: "The length of each sample of a client's rate.", check: atLeast(1)},

	// Authorizer.
	{Name: "authorizer.class.name", Type: tString, Default: str(""), Doc: "The authorizer: empty for none, or Kafka's StandardAuthorizer or AclAuthorizer, both meaning samsa's (ACLs in etcd, Kafka's semantics).", check: oneOf("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer")},
	{Name: "allow.everyone.if.no.acl.found", Type: tBool, Default: str("false"), Doc: "With an authorizer: a resource no ACL matches is allowed to everyone."},
	{Name: "super.users", Type: tString, Default: nil, Doc: "With an authorizer: principals allowed everything, separated by ';' (User:admin;User:broker)."},
	{Name: "create.topic.policy.class.name", Type: tClass, Default: nil, Doc: "Create-topic policy class. samsa runs no Java policy; only an empty value is accepted.", check: oneOf("")},
	{Name: "alter.config.policy.class.name", Type: tClass, Default: nil, Doc: "Alter-config policy class. samsa runs no Java policy; only an empty value is accepted.", check: oneOf("")},

	// samsa's own.
	{Name: "etcd.endpoints", Type: tList, Default: str(""), Doc: "samsa: comma-separated etcd client URLs (http://host:port). Empty starts an embedded etcd under <first log dir>/etcd on loopback ports.", check: checkEndpoints},
	{Name: "etcd.prefix", Type: tString, Default: str("/samsa"), Doc: "samsa: the etcd key prefix of the cluster's metadata.", check: checkPrefix},
	{Name: "samsa.broker.liveness.probe.ms", Type: tInt, Default: str("250"), Doc: "samsa: how often each broker connects to its peers' inter-broker ports; a registration whose port refuses connections to a majority of the other brokers (its process is gone) is fenced at once rather than after broker.session.timeout.ms. 0 turns the probe off.", check: atLeast(0)},
	{Name: "samsa.replica.leader.unreachable.ms", Type: tInt, Default: str("2000"), Doc: "samsa: how long the liveness probe must fail to connect to a peer (refused or timed out) before this broker reports it unreachable in etcd, with where it stands in the partitions it follows from it; when every other live ISR member of a partition reports its live leader unreachable, the controller moves the leadership to one of them that was caught up to the high watermark (a leader cut off from its followers but not from etcd). 0 turns the reports off.", check: atLeast(0)},
	{Name: "samsa.fetch.sendfile", Type: tBool, Default: str("true"), Doc: "samsa: send Fetch record bytes with sendfile(2) on plain TCP; false copies them through user space."},
	{Name: "samsa.test.fault.file", Type: tString, Default: str(""), Doc: "samsa, for fault tests only: a file `samsa serve` reads every 100 ms; each line makes the log directories' file system fail operations, as `ops [sticky] [eio|enospc] [path=SUBSTRING]` with ops a comma-separated subset of write, fsync, fsyncdir, syncfs, rename, create, remove, truncate, read (a fault on fsync fails a syncfs too); a missing or empty file clears the faults. Empty (the default): the logs use the OS file system directly."},
	{Name: "samsa.http.pprof", Type: tBool, Default: str("false"), Doc: "samsa: the HTTP listener (samsa.http.listener) also serves Go's runtime profiles at /debug/pprof/ (CPU, heap, goroutines, mutex and block), for `go tool pprof`. Anyone who reaches the listener can read them: keep it on loopback or a trusted network."},
	{Name: "samsa.http.listener", Type: tString, Default: str(""), Doc: "samsa: host:port of the HTTP listener serving Prometheus metrics at /metrics and the web console at /. Empty (the default) serves no HTTP.", check: checkHTTPListener},
	{Name: "samsa.schema.registry.listener", Type: tString, Default: str(""), Doc: "samsa: host:port (or http://host:port) of the HTTP listener serving the Confluent-compatible Schema Registry REST API (Confluent's port is 8081), its state kept in kafkastore.topic; https://host:port serves HTTPS with the TLS settings of listener.name.schema_registry.ssl.* (else ssl.*). Empty (the default) serves no registry.", check: checkRegistryListener},
	{Name: "authentication.method", Type: tString, Default: str("NONE"), Doc: "samsa, Confluent Schema Registry's property: BASIC has the schema registry authenticate every request with HTTP basic credentials, checked against the cluster's SASL users (the PLAIN users of the SASL listeners' JAAS configs, the SCRAM credentials); NONE (the default) authenticates none. With an authorizer, the cluster's ACLs authorize each request (see the registry package).", check: oneOfFold("NONE", "BASIC")},
	{Name: "kafkastore.topic", Type: tString, Default: str("_schemas"), Doc: "samsa, Confluent Schema Registry's property: the compacted topic (one partition) the schema registry keeps its schemas, configs and modes in, in Confluent's record format.", check: checkTopicName},
	{Name: "schema.compatibility.level", Type: tString, Default: str("backward"), Doc: "samsa, Confluent Schema Registry's property: the schema registry's global compatibility level until PUT /config sets one: none, backward, backward_transitive, forward, forward_transitive, full or full_transitive.", check: oneOfFold("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")},
	{Name: "samsa.http.proxy.listener", Type: tString, Default: str(""), Doc: "samsa: host:port (or http://host:port) of the HTTP listener serving Confluent REST Proxy's API (v2 and v3; Confluent's port is 8082), a Kafka client of this broker's first PLAINTEXT or SASL_PLAINTEXT listener: on a SASL one, every request needs HTTP Basic credentials of a SASL user and is authorized as that user; https://host:port serves HTTPS with the TLS settings of listener.name.rest_proxy.ssl.* (else ssl.*). Empty (the default) serves no proxy.", check: checkRegistryListener},
	{Name: "consumer.instance.timeout.ms", Type: tLong, Default: str("300000"), Doc: "samsa, Confluent REST Proxy's property: a consumer instance of the REST proxy idle this long is closed (it leaves its group).", check: atLeast(1)},
	{Name: "consumer.request.timeout.ms", Type: tLong, Default: str("1000"), Doc: "samsa, Confluent REST Proxy's property: how long a REST proxy read of records gathers records when the request names no timeout.", check: atLeast(1)},
	{Name: "consumer.request.max.bytes", Type: tLong, Default: str("67108864"), Doc: "samsa, Confluent REST Proxy's property: the most bytes (keys and values) a REST proxy read of records answers; a request's max_bytes may only lower it.", check: atLeast(1)},
	{Name: "access.control.allow.origin", Type: tString, Default: str(""), Doc: "samsa, Confluent REST Proxy's property: the origins (comma separated; * any, or any characters inside an origin, as http://*.example.com) whose pages may call the REST proxy from a browser (CORS, as Jetty's CrossOriginFilter answers, preflight requests included, before authentication). Empty (the default) sends no CORS headers."},
	{Name: "access.control.allow.methods", Type: tString, Default: str(""), Doc: "samsa, Confluent REST Proxy's property: the methods (comma separated) a cross-origin page may use on the REST proxy when access.control.allow.origin is set; empty is GET,POST,HEAD."},
	{Name: "access.control.allow.headers", Type: tString, Default: str(""), Doc: "samsa, Confluent REST Proxy's property: the request headers (comma separated; * any) a cross-origin page may send the REST proxy when access.control.allow.origin is set; empty is X-Requested-With,Content-Type,Accept,Origin."},
}

// rackAwareSelector is Kafka's rack-aware replica.selector.class.
const rackAwareSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

var brokerIndex = func() map[string]*Def {
	for i := range brokerDefs {
		if brokerDefs[i].Ignored {
			brokerDefs[i].Doc += ignoredNote
		}
	}
	return indexByName(brokerDefs, func(d *Def) string { return d.Name })
}()

// indexByName maps the name of each of a table's definitions to it.
// The names are unique (TestTablesAreConsistent checks the broker and
// topic tables).
func indexByName[D any](defs []D, name func(*D) string) map[string]*D {
	m := make(map[string]*D, len(defs))
	for i := range defs {
		m[name(&defs[i])] = &defs[i]
	}
	return m
}

// lookup returns a copy of the definition of index named name, and
// whether there is one.
func lookup[D any](index map[string]*D, name string) (D, bool) {
	d, ok := index[name]
	if !ok {
		var none D
		return none, false
	}
	return *d, true
}

// BrokerDef returns the definition of a broker property.
func BrokerDef(name string) (Def, bool) { return lookup(brokerIndex, name) }

// ---- value checks ------------------------------------------------------

// intWidths are the integer config types' sizes, and how Kafka's
// messages name them.
var intWidths = map[kmsg.ConfigType]struct {
	bits int
	what string
}{
	tShort: {16, "SHORT"},
	tInt:   {32, "INT"},
	tLong:  {64, "LONG"},
}

// parseTyped checks that v (already trimmed) is a value of type t and
// returns Kafka's canonical string form of it. Its errors are
// invalidValues with the reason Kafka's ConfigDef gives.
func parseTyped(t kmsg.ConfigType, v string) (string, error) {
	switch t {
	case tBool:
		switch strings.ToLower(v) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", &invalidValue{v, "Expected value to be either true or false"}
	case tShort, tInt, tLong:
		w := intWidths[t]
		n, err := strconv.ParseInt(v, 10, w.bits)
		if err != nil {
			return "", &invalidValue{v, "Not a number of type " + w.what}
		}
		return strconv.FormatInt(n, 10), nil
	case tDouble:
		f, err := parseJavaDouble(v)
		if err != nil {
			return "", &invalidValue{v, "Not a number of type DOUBLE"}
		}
		return formatDouble(f), nil
	case tList:
		return strings.Join(splitList(v), ","), nil
	default:
		return v, nil
	}
}

// formatDouble formats like Java's Double.toString for the values configs
// use: 0.5 -> "0.5", 1 -> "1.0", NaN, Infinity.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// splitList splits a comma-separated list, trimming each element and
// dropping empty ones (Kafka does the same for LIST values).
func splitList(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func atLeast(min int64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && f < float64(min) {
			return fmt.Errorf("value must be at least %d", min)
		}
		return nil
	}
}

func between(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && (f < lo || f > hi) {
			return fmt.Errorf("value must be between %v and %v", lo, hi)
		}
		return nil
	}
}

func gzipLevel(v string) error {
	n, err := strconv.Atoi(v)
	if err == nil && n != -1 && (n < 1 || n > 9) {
		return errors.New("value must be -1 or between 1 and 9")
	}
	return nil
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		if len(allowed) == 1 && allowed[0] == "" {
			return errors.New("not supported by samsa")
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// oneOfFold is oneOf ignoring case.
func oneOfFold(allowed ...string) func(string) error {
	one := oneOf(allowed...)
	return func(v string) error { return one(strings.ToUpper(v)) }
}

func listIn(allowed ...string) func(string) error {
	one := oneOf(allowed...)
	return func(v string) error {
		for _, e := range splitList(v) {
			if err := one(e); err != nil {
				return fmt.Errorf("element %q: %w", e, err)
			}
		}
		return nil
	}
}

func checkDirs(v string) error {
	if len(splitList(v)) == 0 {
		return errors.New("no directory given")
	}
	return nil
}

func checkEndpoints(v string) error {
	for _, e := range splitList(v) {
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			return fmt.Errorf("endpoint %q: expected http://host:port", e)
		}
	}
	return nil
}

// checkTopicName accepts a topic name Kafka would.
func checkTopicName(v string) error {
	if v == "" || len(v) > 249 || v == "." || v == ".." {
		return fmt.Errorf("%q is not a valid topic name", v)
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q is not a valid topic name: only ASCII alphanumerics, '.', '_' and '-'", v)
		}
	}
	return nil
}

// checkRegistryListener checks samsa.schema.registry.listener:
// host:port, with an http:// or https:// scheme or none.
func checkRegistryListener(v string) error {
	_, addr := RegistryListener(v)
	return checkHTTPListener(addr)
}

// RegistryListener splits samsa.schema.registry.listener into its scheme
// (http unless https:// is given) and its host:port.
func RegistryListener(v string) (scheme, addr string) {
	if rest, ok := strings.CutPrefix(v, "https://"); ok {
		return "https", rest
	}
	return "http", strings.TrimPrefix(v, "http://")
}

func checkHTTPListener(v string) error {
	if v == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("expected host:port: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q out of range", port)
	}
	return nil
}

func checkPrefix(v string) error {
	if !strings.HasPrefix(v, "/") || (len(v) > 1 && strings.HasSuffix(v, "/")) {
		return errors.New("must start with / and not end with /")
	}
	return nil
}
