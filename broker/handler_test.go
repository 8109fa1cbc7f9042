package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/logstore"
)

// The handler tests (NN_name_test.go, one per NN_name.go) drive one
// in-process broker with an embedded etcd over loopback: requests at exact
// versions as the super user over a PLAINTEXT listener (raw frames), and
// the same requests as alice, a SASL user with no ACLs, through kgo pinned
// to the request's version, for the authorization errors.

// handlerBroker is a broker for one handler test.
type handlerBroker struct {
	t    *testing.T
	addr string // PLAINTEXT: the principal is ANONYMOUS, a super user
	sasl string // SASL_PLAINTEXT (PLAIN): admin (super user), alice, bob
	node *testutil.Node
}

// startHandlerBroker starts a broker with the StandardAuthorizer on, super
// users admin and ANONYMOUS, and extra properties on top, and waits until
// it is the controller.
func startHandlerBroker(t *testing.T, extra map[string]string) *handlerBroker {
	t.Helper()
	props := map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name": "PLAINTEXT",
		"sasl.enabled.mechanisms":    "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                         "User:admin;User:ANONYMOUS",
		"auto.create.topics.enable":                           "false",
		"offsets.topic.replication.factor":                    "1",
		"transaction.state.log.replication.factor":            "1",
		"transaction.state.log.min.isr":                       "1",
	}
	for k, v := range extra {
		props[k] = v
	}
	n := testutil.StartBroker(t, props)
	addrs := n.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("listeners bound %v, want two", addrs)
	}
	b := &handlerBroker{t: t, addr: addrs[0], sasl: addrs[1], node: n}
	b.waitController()
	return b
}

// startHandlerTest runs t in parallel with the other handler tests on a
// broker of its own (startHandlerBroker's) with topics (name → partition
// count) created.
func startHandlerTest(t *testing.T, topics map[string]int32) *handlerBroker {
	t.Helper()
	t.Parallel()
	b := startHandlerBroker(t, nil)
	for name, partitions := range topics {
		b.createTopic(name, partitions)
	}
	return b
}

// as sends req at req.GetVersion() as user, through kgo over SASL, to the
// one broker and returns the answer.
func (b *handlerBroker) as(user string, req kmsg.Request) kmsg.Response {
	b.t.Helper()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(req.Key(), req.GetVersion())
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.sasl),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.MaxVersions(versions),
		kgo.RequestTimeoutOverhead(10*time.Second),
	)
	if err != nil {
		b.t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		b.t.Fatalf("%s v%d as %s: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), user, err)
	}
	if resp.GetVersion() != req.GetVersion() {
		b.t.Fatalf("%s as %s: sent at v%d, want v%d", kmsg.NameForKey(req.Key()), user, resp.GetVersion(), req.GetVersion())
	}
	return resp
}

// do sends req at req.GetVersion() as the super user on a fresh
// connection and decodes the answer at that version.
func (b *handlerBroker) do(req kmsg.Request) kmsg.Response {
	b.t.Helper()
	resp, err := b.try(req)
	if err != nil {
		b.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// try is do returning its error.
func (b *handlerBroker) try(req kmsg.Request) (kmsg.Response, error) {
	c, err := net.DialTimeout("tcp", b.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return tryOn(c, req)
}

// tryOn sends req at req.GetVersion() on c and decodes the answer.
func tryOn(c net.Conn, req kmsg.Request) (kmsg.Response, error) {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("handler-test")).AppendRequest(nil, req, 7)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return exchangeOn(c, frame, resp, req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16())
}

// handlerConn is one connection as the super user, for requests whose
// state lives with their connection (share sessions).
type handlerConn struct {
	t *testing.T
	c net.Conn
}

// dial opens a handlerConn, closed when the test ends.
func (b *handlerBroker) dial() *handlerConn {
	b.t.Helper()
	c, err := net.DialTimeout("tcp", b.addr, 5*time.Second)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { c.Close() })
	return &handlerConn{t: b.t, c: c}
}

// do is handlerBroker.do on the connection.
func (hc *handlerConn) do(req kmsg.Request) kmsg.Response {
	hc.t.Helper()
	resp, err := tryOn(hc.c, req)
	if err != nil {
		hc.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// raw sends a hand-made frame (correlation id 7) as the super user and
// decodes the answer into resp, whose version is set (header v0).
func (b *handlerBroker) raw(frame []byte, resp kmsg.Response) kmsg.Response {
	b.t.Helper()
	resp, err := b.exchange(frame, resp, false)
	if err != nil {
		b.t.Fatalf("raw frame: %v", err)
	}
	return resp
}

// exchange writes frame on a fresh connection and decodes the answer into
// resp; tagged says the response header is v1 (a tag buffer).
func (b *handlerBroker) exchange(frame []byte, resp kmsg.Response, tagged bool) (kmsg.Response, error) {
	c, err := net.DialTimeout("tcp", b.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return exchangeOn(c, frame, resp, tagged)
}

// exchangeOn is exchange on c.
func exchangeOn(c net.Conn, frame []byte, resp kmsg.Response, tagged bool) (kmsg.Response, error) {
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("answer of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, err
	}
	if id := int32(binary.BigEndian.Uint32(body)); id != 7 {
		return nil, fmt.Errorf("correlation id %d, want 7", id)
	}
	body = body[4:]
	// Every response header but ApiVersions' is v1 (a tag buffer) when
	// the request is flexible.
	if tagged {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("response header tags %x", body[:min(len(body), 4)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	return resp, nil
}

// eventually polls cond until it returns nil, failing the test after
// the handler tests' one deadline.
func (b *handlerBroker) eventually(cond func() error) {
	b.t.Helper()
	testutil.Eventually(b.t, 20*time.Second, cond)
}

// createTopic creates topic with partitions partitions as the super user
// and waits until its partitions have a leader.
func (b *handlerBroker) createTopic(topic string, partitions int32, configs ...string) [16]byte {
	b.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := b.do(req).(*kmsg.CreateTopicsResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		b.t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	b.waitLeaders(topic, partitions)
	return resp.Topics[0].TopicID
}

// waitLeaders polls Metadata until every partition of topic has a leader.
func (b *handlerBroker) waitLeaders(topic string, partitions int32) {
	b.t.Helper()
	b.eventually(func() error {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := b.try(req)
		if err != nil {
			return err
		}
		mt := resp.(*kmsg.MetadataResponse).Topics[0]
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return err
		}
		if int32(len(mt.Partitions)) != partitions {
			return fmt.Errorf("%d partitions", len(mt.Partitions))
		}
		for _, p := range mt.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d, %v", p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		return nil
	})
}

// produce appends values to topic's partition as the super user (acks -1)
// and returns the base offset.
func (b *handlerBroker) produce(topic string, partition int32, values ...string) int64 {
	b.t.Helper()
	resp := b.do(produceRequest(9, topic, partition, values...)).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		b.t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
	return p.BaseOffset
}

// produceRequest is a Produce of one batch of values, acks -1.
func produceRequest(version int16, topic string, partition int32, values ...string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	if len(values) > 0 {
		rp.Records = batchOf(values...)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// batchOf is a v2 record batch of values (no key, no compression).
func batchOf(values ...string) []byte {
	recs := make([]logstore.Record, len(values))
	for i, v := range values {
		recs[i] = logstore.Record{Value: []byte(v)}
	}
	batch, err := logstore.BuildBatch(0, logstore.CodecNone, recs, -1, -1, -1)
	if err != nil {
		panic(err) // only the test's own values reach here
	}
	return batch
}

// topOr is an answer's code: top, its top-level one, when that is an
// error, else the one inner reads (a partition's, a result's).
func topOr(top int16, inner func() int16) int16 {
	if top != 0 {
		return top
	}
	return inner()
}

// wantCode fails the test unless got is want (both Kafka error codes).
func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	code := int16(0)
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Errorf("%s: %v (%d), want %v (%d)", what, kerr.ErrorForCode(got), got, want, code)
	}
}

// grant is one ACL allowing a principal an operation on a resource named
// literally.
type grant struct {
	typ  kmsg.ACLResourceType
	name string
	op   kmsg.ACLOperation
}

// clusterGrant allows op on the cluster.
func clusterGrant(op kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeCluster, "kafka-cluster", op}
}

// groupGrant and topicGrant allow op on a group or topic.
func groupGrant(name string, op kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeGroup, name, op}
}

func topicGrant(name string, op kmsg.ACLOperation) grant {
	return grant{kmsg.ACLResourceTypeTopic, name, op}
}

// allow creates grants for user as the super user; CreateAcls answers
// once this broker's authorizer has them.
func (b *handlerBroker) allow(user string, grants ...grant) {
	b.t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, g := range grants {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = g.typ, g.name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+user, "*", g.op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	for i, r := range b.do(req).(*kmsg.CreateACLsResponse).Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			b.t.Fatalf("granting %s %+v: %v", user, grants[i], err)
		}
	}
}

// authzStep is one step of wantAuthz: the grants added before it and the
// code then wanted.
type authzStep struct {
	grants []grant
	want   *kerr.Error
}

// wantAuthz sends req as alice after each step's grants (added to those
// she has) and wants the step's code, as code reads it from the
// answer: typically the authorization error with no ACL, another with
// some, and the answer of an authorized request once alice has them all.
func (b *handlerBroker) wantAuthz(req kmsg.Request, code func(kmsg.Response) int16, steps ...authzStep) {
	b.t.Helper()
	for _, s := range steps {
		if len(s.grants) > 0 {
			b.allow("alice", s.grants...)
		}
		wantCode(b.t, fmt.Sprintf("%s as alice, granted %+v", kmsg.NameForKey(req.Key()), s.grants), code(b.as("alice", req)), s.want)
	}
}
