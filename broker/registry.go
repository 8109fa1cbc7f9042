package broker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/registry"
	"github.com/samsa-io/samsa/security"
)

// newRegistry builds the schema registry when
// samsa.schema.registry.listener is set; Start builds it before metadata
// is first synced, and serves it (serveRegistry) once the broker's
// listeners are up.
func (b *Broker) newRegistry() {
	if b.settings.SchemaRegistryListener == "" {
		return
	}
	b.registryPeers = &peerConns{b: b}
	cfg := registry.Config{
		Log:           &schemasLog{b: b, topic: b.settings.SchemaRegistryTopic, peers: b.registryPeers},
		Logger:        b.log.With("component", "registry"),
		Topic:         b.settings.SchemaRegistryTopic,
		Compatibility: b.settings.SchemaCompatibility,
		Leader:        b.registryLeader,
		Observe:       b.metrics.registryRequest,
		Authorize:     b.registryAuthorize,
	}
	if strings.EqualFold(b.settings.SchemaRegistryAuth, "BASIC") {
		cfg.Authenticate = (&registryAuth{b: b}).authenticate
	}
	if b.registryTLS != nil {
		// Writes are forwarded to the writer's HTTPS listener, trusted as
		// the registry's own settings trust.
		cfg.Client = &http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: b.registryTLS.ClientConfig("")}}
	}
	b.registry = registry.New(cfg)
}

// registryTLSName is the listener name whose ssl.* overrides
// (listener.name.schema_registry.ssl.*) an https:// registry listener
// serves with.
const registryTLSName = "schema_registry"

// listenRegistry binds samsa.schema.registry.listener, before the broker
// registers with the registry's URL in its registration.
func (b *Broker) listenRegistry() error {
	if b.settings.SchemaRegistryListener == "" {
		return nil
	}
	scheme, addr := config.RegistryListener(b.settings.SchemaRegistryListener)
	if scheme == "https" {
		get := func(key string) string { return b.props.ListenerString(registryTLSName, key) }
		t, err := security.NewTLS(security.TLSConfigFrom(get), b.log.With("listener", registryTLSName))
		if err != nil {
			return fmt.Errorf("broker: samsa.schema.registry.listener %s: %w", b.settings.SchemaRegistryListener, err)
		}
		b.registryTLS = t
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("broker: samsa.schema.registry.listener %s: %w", addr, err)
	}
	b.registryLn = ln
	return nil
}

// registryURL is the URL other brokers forward registry writes to: the
// listener's address, with the first advertised listener's host when it
// is bound to every interface.
func (b *Broker) registryURL() string {
	if b.registryLn == nil {
		return ""
	}
	host, port, err := net.SplitHostPort(b.registryLn.Addr().String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() && len(b.advertised) > 0 {
		host = b.advertised[0].Host
	}
	return b.registryScheme() + "://" + net.JoinHostPort(host, port)
}

// registryScheme is http, or https when the registry serves TLS.
func (b *Broker) registryScheme() string {
	if b.registryTLS != nil {
		return "https"
	}
	return "http"
}

// serveRegistry starts the registry's reader and serves it.
func (b *Broker) serveRegistry() error {
	if b.registry == nil {
		if b.registryLn != nil {
			b.registryLn.Close()
		}
		return nil
	}
	b.registry.Start()
	ln := b.registryLn
	if b.registryTLS != nil {
		ln = tls.NewListener(ln, b.registryTLS.ServerConfig())
	}
	b.registry.Serve(ln)
	b.log.Info("serving the schema registry", "url", b.registryScheme()+"://"+b.registry.Addr()+"/")
	return nil
}

// registryLeader is the URL of the registry of the broker that leads the
// registry's topic: the one that writes.
func (b *Broker) registryLeader(ctx context.Context) (string, error) {
	p := b.meta.partition(b.settings.SchemaRegistryTopic, 0)
	if p == nil {
		return "", kerr.UnknownTopicOrPartition
	}
	leader, _, _, _ := p.State()
	if leader < 0 {
		return "", kerr.LeaderNotAvailable
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return "", err
	}
	for _, bi := range brokers {
		if bi.ID == leader {
			if bi.SchemaRegistryURL == "" {
				return "", fmt.Errorf("broker %d, the leader of %s, serves no schema registry", leader, b.settings.SchemaRegistryTopic)
			}
			return bi.SchemaRegistryURL, nil
		}
	}
	return "", fmt.Errorf("%w: broker %d is not registered", kerr.BrokerNotAvailable, leader)
}

// closeRegistry stops the registry and drops its listener and
// connections (the listener is bound before the broker registers: a Start
// that failed after that leaves it to close here).
func (b *Broker) closeRegistry() {
	if b.registry != nil {
		b.registry.Close() // its server's Shutdown closes the listener
		b.registryPeers.close()
	}
	if b.registryLn != nil {
		b.registryLn.Close()
	}
}

// RegistryAddr is the bound address of samsa.schema.registry.listener, or
// "".
func (b *Broker) RegistryAddr() string {
	if b.registry == nil {
		return ""
	}
	return b.registry.Addr()
}

// syncRegistry tells the schema registry whether this broker leads its
// topic's partition 0, the one writer of the cluster.
func (b *Broker) syncRegistry() {
	if b.registry == nil {
		return
	}
	owned := map[int32]int32{}
	if p := b.meta.partition(b.settings.SchemaRegistryTopic, 0); p != nil {
		if _, epoch, err := b.replicas.Leading(p, -1); err == nil {
			owned[0] = epoch
		}
	}
	b.registry.SetOwned(owned)
}

// schemasLog is the registry's topic (kafkastore.topic) as the registry
// reads and writes it: appends on the leader in its epoch, reads through
// Fetch requests to the leader, wherever it is (this broker included), as
// Confluent's registry reads with a consumer.
type schemasLog struct {
	b     *Broker
	topic string
	peers *peerConns // the reader's own connections: a long-polling fetch holds one
}

// Ensure creates the topic as Confluent's registry does: one partition,
// compacted, kafkastore.topic.replication.factor (3) replicas capped by
// the live brokers.
func (l *schemasLog) Ensure(ctx context.Context) error {
	return l.b.ensureInternalTopic(ctx, internalTopic{
		name:       l.topic,
		partitions: 1,
		rf:         3,
		configs: func(rf int) map[string]string {
			return map[string]string{
				"cleanup.policy":      "compact",
				"min.insync.replicas": strconv.Itoa(max(rf-1, 1)),
			}
		},
		sync: l.b.syncRegistry,
	})
}

// Append writes recs as one batch in leader epoch epoch and waits until
// it is committed.
func (l *schemasLog) Append(ctx context.Context, epoch int32, recs []registry.Record) (int64, error) {
	b := l.b
	p := b.meta.partition(l.topic, 0)
	if p == nil {
		return 0, kerr.UnknownTopicOrPartition
	}
	now := time.Now()
	lrecs := make([]logstore.Record, len(recs))
	for i, r := range recs {
		lrecs[i] = logstore.Record{Timestamp: now.UnixMilli(), Key: r.Key, Value: r.Value}
	}
	batch, err := logstore.BuildBatch(0, logstore.CodecNone, lrecs, -1, -1, -1)
	if err != nil {
		return 0, err
	}
	return b.appendBatchAt(ctx, p, epoch, batch, now)
}

// Read fetches committed records from the partition's leader.
func (l *schemasLog) Read(ctx context.Context, from int64, wait time.Duration) ([]registry.Record, int64, error) {
	b := l.b
	p := b.meta.partition(l.topic, 0)
	if p == nil {
		return nil, from, kerr.UnknownTopicOrPartition
	}
	leader, _, _, _ := p.State()
	if leader < 0 {
		return nil, from, kerr.LeaderNotAvailable
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 4 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = l.topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 0
	rp.FetchOffset = from
	rp.PartitionMaxBytes = 4 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrFetchResponse()
	rctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	if err := l.peers.roundTrip(rctx, leader, req, resp); err != nil {
		return nil, from, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, from, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, from, fmt.Errorf("fetch of %s answered %d topics", l.topic, len(resp.Topics))
	}
	rp2 := resp.Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(rp2.ErrorCode); {
	case errors.Is(err, kerr.OffsetOutOfRange) && rp2.LogStartOffset > from:
		return nil, rp2.LogStartOffset, nil
	case err != nil:
		return nil, from, err
	}
	return schemasRecords(rp2.RecordBatches, from)
}

// schemasRecords decodes the whole batches of a fetched blob (a fetch may
// end in part of one), skipping control batches and the records before
// from; it returns the offset to read next.
func schemasRecords(blob []byte, from int64) ([]registry.Record, int64, error) {
	var out []registry.Record
	next := from
	for len(blob) >= logstore.BatchHeaderSize {
		size := 12 + int64(int32(binary.BigEndian.Uint32(blob[8:])))
		if size < logstore.BatchHeaderSize || size > int64(len(blob)) {
			break
		}
		raw := blob[:size]
		blob = blob[size:]
		h, err := logstore.ParseBatchHeader(raw)
		if err != nil {
			return out, next, err
		}
		if !h.IsControl() {
			err = logstore.ForEachRecord(raw, func(r logstore.Record) bool {
				if r.Offset >= from && r.Key != nil {
					out = append(out, registry.Record{Offset: r.Offset, Key: r.Key, Value: r.Value})
				}
				return true
			})
			if err != nil {
				return out, next, err
			}
		}
		next = max(next, h.LastOffset()+1)
	}
	return out, next, nil
}
