package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// BrokerSettings are the broker properties samsa acts on, decoded once
// when the Props are built (Load, New, With) and read by the broker
// instead of looking names up where they are used. Each field's prop tag
// names its property; a duration field's tag also gives the property's
// unit (ms, s or min). Decoding panics on a tag that names no property,
// so that every test building a Props fails on a misspelt one, and
// TestBrokerSettingsTags walks every tag against the definitions.
// Changes at run time (later) will go through this struct too.
type BrokerSettings struct {
	// Derived from more than one property (see the Props methods of the
	// same names): not tagged.
	NodeID              int32
	LogDirs             []string
	Listeners           []Listener
	AdvertisedListeners []Listener

	Rack string `prop:"broker.rack"` // "" when unset

	EtcdEndpoints []string `prop:"etcd.endpoints"`
	EtcdPrefix    string   `prop:"etcd.prefix"`
	Sendfile      bool     `prop:"samsa.fetch.sendfile"`
	HTTPListener  string   `prop:"samsa.http.listener"` // "": no HTTP
	FaultFile     string   `prop:"samsa.test.fault.file"`
	HTTPPprof     bool     `prop:"samsa.http.pprof"`

	SchemaRegistryListener string `prop:"samsa.schema.registry.listener"` // "": no registry
	SchemaRegistryTopic    string `prop:"kafkastore.topic"`
	SchemaCompatibility    string `prop:"schema.compatibility.level"`
	SchemaRegistryAuth     string `prop:"authentication.method"` // NONE or BASIC

	HTTPProxyListener    string        `prop:"samsa.http.proxy.listener"` // "": no REST proxy
	ProxyInstanceTimeout time.Duration `prop:"consumer.instance.timeout.ms,ms"`
	ProxyRequestTimeout  time.Duration `prop:"consumer.request.timeout.ms,ms"`
	ProxyRequestMaxBytes int64         `prop:"consumer.request.max.bytes"`
	ProxyCORSOrigin      string        `prop:"access.control.allow.origin"`
	ProxyCORSMethods     string        `prop:"access.control.allow.methods"`
	ProxyCORSHeaders     string        `prop:"access.control.allow.headers"`

	SocketRequestMaxBytes    int32         `prop:"socket.request.max.bytes"`
	SocketSendBufferBytes    int32         `prop:"socket.send.buffer.bytes"`    // -1: the OS default
	SocketReceiveBufferBytes int32         `prop:"socket.receive.buffer.bytes"` // -1: the OS default
	ConnectionsMaxIdle       time.Duration `prop:"connections.max.idle.ms,ms"`
	MaxConnections           int32         `prop:"max.connections"`
	MaxConnectionsPerIP      int32         `prop:"max.connections.per.ip"`
	MaxConnectionsPerIPOver  string        `prop:"max.connections.per.ip.overrides"` // see ParseIPOverrides
	MaxConnectionCreation    int32         `prop:"max.connection.creation.rate"`
	FetchMaxBytes            int32         `prop:"fetch.max.bytes"`
	SaslServerMaxReceiveSize int32         `prop:"sasl.server.max.receive.size"`
	SaslInterBrokerMechanism string        `prop:"sasl.mechanism.inter.broker.protocol"`

	DelegationTokenSecret      string        `prop:"delegation.token.secret.key"` // "": tokens disabled
	DelegationTokenMaxLifetime time.Duration `prop:"delegation.token.max.lifetime.ms,ms"`
	DelegationTokenExpiry      time.Duration `prop:"delegation.token.expiry.time.ms,ms"`
	DelegationTokenCheck       time.Duration `prop:"delegation.token.expiry.check.interval.ms,ms"`

	AutoCreateTopics         bool          `prop:"auto.create.topics.enable"`
	NumPartitions            int32         `prop:"num.partitions"`
	DefaultReplicationFactor int16         `prop:"default.replication.factor"`
	DeleteTopicEnable        bool          `prop:"delete.topic.enable"`
	LogRetentionCheck        time.Duration `prop:"log.retention.check.interval.ms,ms"`
	LogCleanerEnable         bool          `prop:"log.cleaner.enable"`
	LogCleanerBackoff        time.Duration `prop:"log.cleaner.backoff.ms,ms"`
	LogCleanerDedupeBytes    int64         `prop:"log.cleaner.dedupe.buffer.size"`
	ProducerIDExpirationMs   int64         `prop:"producer.id.expiration.ms"`

	BrokerSessionTimeout       time.Duration `prop:"broker.session.timeout.ms,ms"`
	InitialRegistrationTimeout time.Duration `prop:"initial.broker.registration.timeout.ms,ms"`
	ControlledShutdown         bool          `prop:"controlled.shutdown.enable"`
	LivenessProbe              time.Duration `prop:"samsa.broker.liveness.probe.ms,ms"`
	LeaderUnreachable          time.Duration `prop:"samsa.replica.leader.unreachable.ms,ms"`

	OffsetsTopicNumPartitions     int32         `prop:"offsets.topic.num.partitions"`
	OffsetsTopicReplicationFactor int16         `prop:"offsets.topic.replication.factor"`
	OffsetsTopicSegmentBytes      int32         `prop:"offsets.topic.segment.bytes"`
	OffsetsRetention              time.Duration `prop:"offsets.retention.minutes,min"`
	OffsetsRetentionCheck         time.Duration `prop:"offsets.retention.check.interval.ms,ms"`
	OffsetsCommitTimeout          time.Duration `prop:"offsets.commit.timeout.ms,ms"`
	OffsetMetadataMaxBytes        int32         `prop:"offset.metadata.max.bytes"`
	TxnStateNumPartitions         int32         `prop:"transaction.state.log.num.partitions"`
	TxnStateReplicationFactor     int16         `prop:"transaction.state.log.replication.factor"`
	TxnStateMinISR                int32         `prop:"transaction.state.log.min.isr"`
	TxnStateSegmentBytes          int32         `prop:"transaction.state.log.segment.bytes"`
	TxnMaxTimeout                 time.Duration `prop:"transaction.max.timeout.ms,ms"`
	TxnIDExpiration               time.Duration `prop:"transactional.id.expiration.ms,ms"`
	TxnAbortInterval              time.Duration `prop:"transaction.abort.timed.out.transaction.cleanup.interval.ms,ms"`
	TxnRemoveInterval             time.Duration `prop:"transaction.remove.expired.transaction.cleanup.interval.ms,ms"`
	TxnVerification               bool          `prop:"transaction.partition.verification.enable"`
	AddTxnRetryBackoff            time.Duration `prop:"add.partitions.to.txn.retry.backoff.ms,ms"`
	AddTxnRetryBackoffMax         time.Duration `prop:"add.partitions.to.txn.retry.backoff.max.ms,ms"`
	GroupInitialRebalanceDelay    time.Duration `prop:"group.initial.rebalance.delay.ms,ms"`
	GroupMinSessionTimeout        time.Duration `prop:"group.min.session.timeout.ms,ms"`
	GroupMaxSessionTimeout        time.Duration `prop:"group.max.session.timeout.ms,ms"`
	GroupMaxSize                  int32         `prop:"group.max.size"`

	ConsumerSessionTimeout       time.Duration `prop:"group.consumer.session.timeout.ms,ms"`
	ConsumerMinSessionTimeout    time.Duration `prop:"group.consumer.min.session.timeout.ms,ms"`
	ConsumerMaxSessionTimeout    time.Duration `prop:"group.consumer.max.session.timeout.ms,ms"`
	ConsumerHeartbeatInterval    time.Duration `prop:"group.consumer.heartbeat.interval.ms,ms"`
	ConsumerMinHeartbeatInterval time.Duration `prop:"group.consumer.min.heartbeat.interval.ms,ms"`
	ConsumerMaxHeartbeatInterval time.Duration `prop:"group.consumer.max.heartbeat.interval.ms,ms"`
	ConsumerMaxSize              int32         `prop:"group.consumer.max.size"`
	ConsumerAssignors            []string      `prop:"group.consumer.assignors"`
	ConsumerMigrationPolicy      string        `prop:"group.consumer.migration.policy"` // as given; compare ignoring case

	StreamsMaxSize int32 `prop:"group.streams.max.size"`

	ShareSessionTimeout         time.Duration `prop:"group.share.session.timeout.ms,ms"`
	ShareHeartbeatInterval      time.Duration `prop:"group.share.heartbeat.interval.ms,ms"`
	ShareMaxSize                int32         `prop:"group.share.max.size"`
	ShareRecordLockDuration     time.Duration `prop:"group.share.record.lock.duration.ms,ms"`
	ShareDeliveryCountLimit     int32         `prop:"group.share.delivery.count.limit"`
	ShareMaxRecordLocks         int32         `prop:"group.share.partition.max.record.locks"`
	ShareMaxSessions            int32         `prop:"group.share.max.share.sessions"`
	ShareStateNumPartitions     int32         `prop:"share.coordinator.state.topic.num.partitions"`
	ShareStateReplicationFactor int16         `prop:"share.coordinator.state.topic.replication.factor"`
	ShareStateMinISR            int16         `prop:"share.coordinator.state.topic.min.isr"`

	ReplicaLagTimeMax            time.Duration `prop:"replica.lag.time.max.ms,ms"`
	ReplicaHWCheckpointInterval  time.Duration `prop:"replica.high.watermark.checkpoint.interval.ms,ms"`
	InterBrokerListenerName      string        `prop:"inter.broker.listener.name"`
	ReplicaFetchMaxBytes         int32         `prop:"replica.fetch.max.bytes"`
	ReplicaFetchMinBytes         int32         `prop:"replica.fetch.min.bytes"`
	ReplicaFetchWaitMax          time.Duration `prop:"replica.fetch.wait.max.ms,ms"`
	ReplicaSocketTimeout         time.Duration `prop:"replica.socket.timeout.ms,ms"`
	ReplicaSelector              string        `prop:"replica.selector.class"`
	LeaderThrottledRate          int64         `prop:"leader.replication.throttled.rate"`
	FollowerThrottledRate        int64         `prop:"follower.replication.throttled.rate"`
	UncleanLeaderElection        bool          `prop:"unclean.leader.election.enable"`
	AutoLeaderRebalance          bool          `prop:"auto.leader.rebalance.enable"`
	LeaderImbalanceCheckInterval time.Duration `prop:"leader.imbalance.check.interval.seconds,s"`

	TelemetryMaxBytes int32 `prop:"telemetry.max.bytes"` // KIP-714 pushes

	RemoteStorageSystem       bool          `prop:"remote.log.storage.system.enable"`
	RemoteLogManagerInterval  time.Duration `prop:"remote.log.manager.task.interval.ms,ms"`
	RemoteFetchMaxWait        time.Duration `prop:"remote.fetch.max.wait.ms,ms"`
	RemoteLogCopierThreads    int32         `prop:"remote.log.manager.copier.thread.pool.size"`
	RemoteCopyMaxBytesPerSec  int64         `prop:"remote.log.manager.copy.max.bytes.per.second"`
	RemoteCopyQuotaWindows    int32         `prop:"remote.log.manager.copy.quota.window.num"`
	RemoteCopyQuotaWindowSec  int32         `prop:"remote.log.manager.copy.quota.window.size.seconds"`
	RemoteFetchMaxBytesPerSec int64         `prop:"remote.log.manager.fetch.max.bytes.per.second"`
	RemoteFetchQuotaWindows   int32         `prop:"remote.log.manager.fetch.quota.window.num"`
	RemoteFetchQuotaWindowSec int32         `prop:"remote.log.manager.fetch.quota.window.size.seconds"`
}

// RackAwareReads reports whether replica.selector.class is Kafka's
// RackAwareReplicaSelector (KIP-392).
func (s *BrokerSettings) RackAwareReads() bool { return s.ReplicaSelector == rackAwareSelector }

// Settings returns the decoded broker settings. The slices are shared:
// treat them as read-only.
func (p *Props) Settings() *BrokerSettings { return &p.settings }

var durationUnits = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "min": time.Minute}

// settingTag splits a prop tag into the property name and its unit.
func settingTag(f reflect.StructField) (name, unit string, ok bool) {
	tag, ok := f.Tag.Lookup("prop")
	if !ok {
		return "", "", false
	}
	name, unit, _ = strings.Cut(tag, ",")
	return name, unit, true
}

// decodeSettings fills a BrokerSettings from validated properties. A tag
// naming an undefined property, or a field whose Go type does not fit the
// property's type, panics: a programming error, found by any test. A value
// out of the field's range (default.replication.factor=40000 for an
// int16) is an error.
func decodeSettings(p *Props) (BrokerSettings, error) {
	s := BrokerSettings{
		NodeID:              p.NodeID(),
		LogDirs:             p.LogDirs(),
		Listeners:           p.listeners,
		AdvertisedListeners: p.advertised,
	}
	v := reflect.ValueOf(&s).Elem()
	t := v.Type()
	var errs []error
	for i := range t.NumField() {
		name, unit, ok := settingTag(t.Field(i))
		if !ok {
			continue
		}
		if err := setField(v.Field(i), p, name, unit); errors.Is(err, errRange) {
			errs = append(errs, p.invalid(name, "out of range for %s", v.Field(i).Type()))
		} else if err != nil {
			panic(fmt.Sprintf("config: BrokerSettings.%s: %v", t.Field(i).Name, err))
		}
	}
	return s, errors.Join(errs...)
}

var errRange = errors.New("out of range")

func setField(f reflect.Value, p *Props, name, unit string) error {
	d := brokerIndex[name]
	if d == nil {
		return fmt.Errorf("property %q is not defined", name)
	}
	raw := p.String(name)
	if f.Type() == reflect.TypeFor[time.Duration]() {
		u, ok := durationUnits[unit]
		if !ok {
			return fmt.Errorf("duration of %q needs a unit (ms, s or min), got %q", name, unit)
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil && raw != "" {
			return fmt.Errorf("%q=%q: %v", name, raw, err)
		}
		if n > int64(1<<63-1)/int64(u) {
			n = int64(1<<63-1) / int64(u) // Long.MAX_VALUE ms: forever
		}
		f.SetInt(n * int64(u))
		return nil
	}
	if unit != "" {
		return fmt.Errorf("unit %q on a field that is not a time.Duration", unit)
	}
	switch f.Kind() {
	case reflect.Bool:
		if d.Type != tBool {
			return fmt.Errorf("property %q is not a BOOLEAN", name)
		}
		f.SetBool(raw == "true")
	case reflect.String:
		f.SetString(raw)
	case reflect.Int16, reflect.Int32, reflect.Int64:
		if d.Type != tShort && d.Type != tInt && d.Type != tLong {
			return fmt.Errorf("property %q is not an integer", name)
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil && raw != "" {
			return fmt.Errorf("%q=%q: %v", name, raw, err)
		}
		if f.OverflowInt(n) {
			return errRange
		}
		f.SetInt(n)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String || d.Type != tList {
			return fmt.Errorf("property %q is not a LIST of strings", name)
		}
		f.Set(reflect.ValueOf(splitList(raw)))
	default:
		return fmt.Errorf("unsupported field type %s", f.Type())
	}
	return nil
}
