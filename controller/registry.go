package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string // listener name, e.g. "PLAINTEXT", "EXTERNAL"
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
	Host             string
	Port             int32
}

// BrokerInfo is a broker's registration under /brokers/ids/<id>.
type BrokerInfo struct {
	ID   int32
	Host string // of the first endpoint when empty
	Port int32  // of the first endpoint when zero
	Rack string // "" = none
	// Endpoints are the advertised listeners; when empty, one PLAINTEXT
	// endpoint Host:Port.
	Endpoints []Endpoint
	// Epoch is the etcd create revision of the registration (Kafka's broker
	// epoch: the czxid of the ZooKeeper node). It grows each time the
	// broker registers anew. Set by Brokers; ignored by RegisterBroker.
	Epoch int64
	// OfflineReplicas are the partitions whose replica on this broker is
	// offline: its log directory failed (Kafka's offline log dirs, KIP-112).
	// The controller treats the broker as dead for them.
	OfflineReplicas []TopicPartition
	// ShuttingDown is set by a broker in controlled shutdown
	// (BeginControlledShutdown): the controller moves the leadership of
	// its partitions to other in-sync replicas and elects it nowhere.
	ShuttingDown bool
	// PreviousEpoch is the epoch of the registration the broker's previous
	// process shut down cleanly in (Kafka's previousBrokerEpoch, from its
	// .kafka_cleanshutdown files), -1 after an unclean shutdown, 0 when
	// unknown (taken as clean). A store registering again after a lost lease sends the
	// epoch it had. See elr.go.
	PreviousEpoch int64
	// SchemaRegistryURL is where the broker serves the schema registry
	// (http://host:port), "" when it does not: a broker that does not
	// write the registry's topic forwards writes there.
	SchemaRegistryURL string
	// LogDirs are the broker's log directories and CordonedLogDirs those
	// of them that are cordoned (KIP-1066, cordoned.log.dirs): they take
	// no new partitions. A broker whose every directory is cordoned
	// (Cordoned) is given no new replica. Kafka's registration carries
	// the directories' ids; samsa's their paths.
	LogDirs, CordonedLogDirs []string
}

// Cordoned reports whether every log directory of the broker is
// cordoned (Kafka: no uncordoned directory), so that no new replica may
// be placed on it.
func (b BrokerInfo) Cordoned() bool {
	if len(b.LogDirs) == 0 {
		return false
	}
	for _, d := range b.LogDirs {
		if !slices.Contains(b.CordonedLogDirs, d) {
			return false
		}
	}
	return true
}

// brokerValue is the JSON of /brokers/ids/<id>, in the form Kafka wrote to
// ZooKeeper (version 5).
type brokerValue struct {
	Version     int               `json:"version"`
	Host        string            `json:"host"`
	Port        int32             `json:"port"`
	JMXPort     int               `json:"jmx_port"`
	Timestamp   string            `json:"timestamp"`
	Endpoints   []string          `json:"endpoints"`
	ProtocolMap map[string]string `json:"listener_security_protocol_map"`
	Rack        *string           `json:"rack,omitempty"`
	Features    map[string]any    `json:"features"`
	// Offline is samsa's own: "topic-partition" of each offline replica.
	Offline []string `json:"samsa_offline_replicas,omitempty"`
	// ShuttingDown is samsa's own: the broker is in controlled shutdown.
	ShuttingDown bool `json:"samsa_controlled_shutdown,omitempty"`
	// PreviousEpoch is samsa's own: BrokerInfo.PreviousEpoch.
	PreviousEpoch int64 `json:"samsa_previous_broker_epoch,omitempty"`
	// SchemaRegistry is samsa's own: BrokerInfo.SchemaRegistryURL.
	SchemaRegistry string `json:"samsa_schema_registry_url,omitempty"`
	// LogDirs and CordonedLogDirs are samsa's own: BrokerInfo's.
	LogDirs         []string `json:"samsa_log_dirs,omitempty"`
	CordonedLogDirs []string `json:"samsa_cordoned_log_dirs,omitempty"`
}

func (b BrokerInfo) normalized() (BrokerInfo, error) {
	if len(b.Endpoints) == 0 {
		if b.Host == "" || b.Port <= 0 {
			return b, fmt.Errorf("%w: broker %d: no endpoint", ErrInvalid, b.ID)
		}
		b.Endpoints = []Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: b.Host, Port: b.Port}}
	}
	b.Endpoints = slices.Clone(b.Endpoints)
	for i := range b.Endpoints {
		e := &b.Endpoints[i]
		if e.Listener == "" || strings.ContainsAny(e.Listener, ":/") {
			return b, fmt.Errorf("%w: broker %d: listener name %q", ErrInvalid, b.ID, e.Listener)
		}
		if e.SecurityProtocol == "" {
			e.SecurityProtocol = e.Listener
		}
		if e.Port < 0 || e.Port > 65535 {
			return b, fmt.Errorf("%w: broker %d: port %d", ErrInvalid, b.ID, e.Port)
		}
	}
	if b.Host == "" && b.Port == 0 {
		b.Host, b.Port = b.Endpoints[0].Host, b.Endpoints[0].Port
	}
	return b, nil
}

func encodeBroker(b BrokerInfo) ([]byte, error) {
	v := brokerValue{
		Version:     5,
		Host:        b.Host,
		Port:        b.Port,
		JMXPort:     -1,
		Timestamp:   strconv.FormatInt(time.Now().UnixMilli(), 10),
		ProtocolMap: make(map[string]string, len(b.Endpoints)),
		Features:    map[string]any{},
	}
	for _, e := range b.Endpoints {
		v.Endpoints = append(v.Endpoints, e.Listener+"://"+net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		v.ProtocolMap[e.Listener] = e.SecurityProtocol
	}
	if b.Rack != "" {
		v.Rack = &b.Rack
	}
	v.ShuttingDown, v.PreviousEpoch, v.SchemaRegistry = b.ShuttingDown, b.PreviousEpoch, b.SchemaRegistryURL
	v.LogDirs, v.CordonedLogDirs = b.LogDirs, b.CordonedLogDirs
	for _, tp := range b.OfflineReplicas {
		v.Offline = append(v.Offline, tp.Topic+"-"+strconv.Itoa(int(tp.Partition)))
	}
	return json.Marshal(v)
}

func decodeBroker(id int32, data []byte) (BrokerInfo, error) {
	var v brokerValue
	if err := json.Unmarshal(data, &v); err != nil {
		return BrokerInfo{}, err
	}
	b := BrokerInfo{ID: id, Host: v.Host, Port: v.Port, ShuttingDown: v.ShuttingDown, PreviousEpoch: v.PreviousEpoch,
		SchemaRegistryURL: v.SchemaRegistry, LogDirs: v.LogDirs, CordonedLogDirs: v.CordonedLogDirs}
	if v.Rack != nil {
		b.Rack = *v.Rack
	}
	for _, s := range v.Offline {
		i := strings.LastIndexByte(s, '-')
		if i <= 0 {
			return BrokerInfo{}, fmt.Errorf("offline replica %q", s)
		}
		p, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil || p < 0 {
			return BrokerInfo{}, fmt.Errorf("offline replica %q", s)
		}
		b.OfflineReplicas = append(b.OfflineReplicas, TopicPartition{Topic: s[:i], Partition: int32(p)})
	}
	for _, s := range v.Endpoints {
		name, hostport, ok := strings.Cut(s, "://")
		if !ok {
			return BrokerInfo{}, fmt.Errorf("endpoint %q", s)
		}
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("endpoint %q: %v", s, err)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("endpoint %q: %v", s, err)
		}
		proto := v.ProtocolMap[name]
		if proto == "" {
			proto = name
		}
		b.Endpoints = append(b.Endpoints, Endpoint{Listener: name, SecurityProtocol: proto, Host: host, Port: int32(p)})
	}
	return b, nil
}

// RegisterBroker writes info under /brokers/ids/<id>, bound to this store's
// lease: it disappears when the store is closed, or within the session TTL
// when the process dies. info.ID must be Config.NodeID. Registering again
// replaces the value. If another live broker holds the id it returns
// ErrBrokerIDInUse. After a lost lease the store registers again by itself.
// The same value goes, without a lease, to /brokers/registered/<id>, which
// stays when the broker goes down (unregister.go).
func (s *Store) RegisterBroker(ctx context.Context, info BrokerInfo) error {
	if info.ID != s.cfg.NodeID {
		return fmt.Errorf("%w: broker id %d is not this store's node id %d", ErrInvalid, info.ID, s.cfg.NodeID)
	}
	info, err := info.normalized()
	if err != nil {
		return err
	}
	sess, err := s.liveSession(ctx)
	if err != nil {
		return err
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if e := s.BrokerEpoch(); e > 0 {
		info.PreviousEpoch = e // registered by this process before: nothing lost
	}
	if err := s.register(ctx, sess, info); err != nil {
		s.leaseLost(sess, err)
		return err
	}
	s.mu.Lock()
	s.broker = &info
	s.mu.Unlock()
	return nil
}

// SetOfflineReplicas registers the broker again with parts as its offline
// replicas (its failed log directories' partitions): the controller elects
// other leaders for them and drops this broker from their ISRs. Kept
// across re-registrations.
func (s *Store) SetOfflineReplicas(ctx context.Context, parts []TopicPartition) error {
	return s.registerChanged(ctx, func(info *BrokerInfo) { info.OfflineReplicas = slices.Clone(parts) })
}

// SetCordonedLogDirs registers the broker again with dirs as its
// cordoned log directories (KIP-1066). Kept across re-registrations.
func (s *Store) SetCordonedLogDirs(ctx context.Context, dirs []string) error {
	return s.registerChanged(ctx, func(info *BrokerInfo) { info.CordonedLogDirs = slices.Clone(dirs) })
}

// registerChanged registers the broker again with its registration
// changed by change.
func (s *Store) registerChanged(ctx context.Context, change func(*BrokerInfo)) error {
	s.mu.Lock()
	if s.broker == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: broker %d not registered", ErrInvalid, s.cfg.NodeID)
	}
	info := *s.broker
	s.mu.Unlock()
	change(&info)
	return s.RegisterBroker(ctx, info)
}

// BeginControlledShutdown registers the broker again as shutting down
// (Kafka's controlled shutdown): the controller moves the leadership of
// its partitions to other live in-sync replicas and elects it leader of
// nothing while another replica can lead. Kept across re-registrations.
func (s *Store) BeginControlledShutdown(ctx context.Context) error {
	return s.registerChanged(ctx, func(info *BrokerInfo) { info.ShuttingDown = true })
}

// reregister writes the last registered info again with sess's lease.
func (s *Store) reregister(ctx context.Context, sess *concurrency.Session) error {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.mu.Lock()
	info, epoch := s.broker, s.brokerEpoch
	s.mu.Unlock()
	if info == nil {
		return nil
	}
	again := *info
	if epoch > 0 {
		again.PreviousEpoch = epoch // the same process: nothing lost
	}
	return s.register(ctx, sess, again)
}

// register writes info bound to sess's lease. A registration held by one
// of this store's lost leases is ours: that lease is revoked first.
func (s *Store) register(ctx context.Context, sess *concurrency.Session, info BrokerInfo) error {
	lease := sess.Lease()
	val, err := encodeBroker(info)
	if err != nil {
		return err
	}
	key := s.brokerKey(info.ID)
	for {
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease)), s.opRegistered(info.ID, val)).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return fmt.Errorf("controller: registering broker %d: %w", info.ID, err)
		}
		if resp.Succeeded {
			s.setBrokerEpoch(resp.Header.Revision)
			return nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // gone in between
		}
		if holder := clientv3.LeaseID(kvs[0].Lease); holder != lease {
			if !s.isRetired(holder) {
				return fmt.Errorf("%w: %d", ErrBrokerIDInUse, info.ID)
			}
			if err := s.revokeLease(ctx, holder); err != nil {
				return fmt.Errorf("controller: registering broker %d: %w", info.ID, err)
			}
			continue
		}
		// Ours: update in place, unless it changed meanwhile.
		resp, err = s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease)), s.opRegistered(info.ID, val)).
			Commit()
		if err != nil {
			return fmt.Errorf("controller: registering broker %d: %w", info.ID, err)
		}
		if resp.Succeeded {
			s.setBrokerEpoch(kvs[0].CreateRevision)
			return nil
		}
	}
}

func (s *Store) setBrokerEpoch(e int64) {
	s.mu.Lock()
	s.brokerEpoch = e
	s.mu.Unlock()
}

// BrokerEpoch is the epoch of this broker's current registration (the
// create revision of /brokers/ids/<id>, as Kafka's czxid), 0 before
// RegisterBroker. Followers send it with their fetches; a leader refuses
// ISR membership to a fetch from an older registration.
func (s *Store) BrokerEpoch() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.brokerEpoch
}

// Brokers returns the live brokers, sorted by id.
func (s *Store) Brokers(ctx context.Context) ([]BrokerInfo, error) {
	bs, _, err := s.brokers(ctx)
	return bs, err
}

// BrokersRev is Brokers with the etcd revision of the read, to pass to
// WatchBrokers.
func (s *Store) BrokersRev(ctx context.Context) ([]BrokerInfo, int64, error) {
	return s.brokers(ctx)
}

func (s *Store) brokers(ctx context.Context) ([]BrokerInfo, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	pfx := s.brokersPrefix()
	resp, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("controller: reading brokers: %w", err)
	}
	out := make([]BrokerInfo, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		id, err := strconv.ParseInt(strings.TrimPrefix(key, pfx), 10, 32)
		if err != nil || id < 0 {
			s.log.Warn("etcd: skipping malformed broker key", "key", key)
			continue
		}
		b, err := decodeBroker(int32(id), kv.Value)
		if err != nil {
			s.log.Warn("etcd: skipping malformed broker registration", "key", key, "err", err)
			continue
		}
		b.Epoch = kv.CreateRevision
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b BrokerInfo) int { return int(a.ID) - int(b.ID) })
	return out, resp.Header.Revision, nil
}
