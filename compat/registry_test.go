package compat

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// startRegistryBroker starts a broker serving the schema registry, and
// returns it with a franz-go registry client of it, once the registry
// takes writes.
func startRegistryBroker(t *testing.T, overrides map[string]string) (*testutil.Node, *sr.Client) {
	t.Helper()
	props := map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"}
	for k, v := range overrides {
		props[k] = v
	}
	b := testutil.StartBroker(t, props)
	return b, registryClient(t, b)
}

func registryClient(t *testing.T, b *testutil.Node) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs("http://" + b.RegistryAddr()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// waitWriter waits until the registry of cl registers schemas.
func waitWriter(t *testing.T, cl *sr.Client) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := cl.CreateSchema(testCtx(t, 10*time.Second), "ready-value", sr.Schema{Schema: `"string"`})
		return err
	})
}

// TestSchemaRegistryStoresAsConfluent: records produced to _schemas in
// Confluent's documented format (as Confluent's registry writes them)
// are served by samsa's registry, and what samsa's registry writes is
// consumed from _schemas in that format.
func TestSchemaRegistryStoresAsConfluent(t *testing.T) {
	b, cl := startRegistryBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	waitWriter(t, cl)
	ctx := testCtx(t, time.Minute)
	defer func() {
		// /metrics counts the registry's requests and errors.
		if _, err := cl.SchemaByID(ctx, 424242); err == nil {
			t.Error("id 424242 found")
		}
		resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`samsa_schema_registry_requests_total{method="POST",route="/subjects/{subject}/versions"}`,
			`samsa_schema_registry_errors_total{error_code="40403",route="/schemas/ids/{id}"}`} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}()
	kc := newKgo(t, b.Addr(), kgo.ConsumeTopics("_schemas"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	schema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	confluent := [][2]string{
		{`{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}`,
			`{"subject":"orders-value","version":1,"id":100,"schemaType":"AVRO","schema":"` + strings.ReplaceAll(schema, `"`, `\"`) + `","deleted":false}`},
		{`{"keytype":"CONFIG","subject":"orders-value","magic":0}`, `{"subject":"orders-value","compatibilityLevel":"FULL_TRANSITIVE"}`},
	}
	for _, kv := range confluent {
		if err := kc.ProduceSync(ctx, &kgo.Record{Topic: "_schemas", Key: []byte(kv[0]), Value: []byte(kv[1])}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		s, err := cl.SchemaByID(ctx, 100)
		if err != nil {
			return err
		}
		if s.Schema != schema {
			return errors.New("id 100 is " + s.Schema)
		}
		// The config record was produced after the schema's.
		if c := cl.Compatibility(ctx, "orders-value"); c[0].Err != nil || c[0].Level != sr.CompatFullTransitive {
			return fmt.Errorf("orders-value compatibility %+v", c)
		}
		return nil
	})
	got, err := cl.CreateSchema(ctx, "payments-value", sr.Schema{Schema: `{"type":"record","name":"P","fields":[]}`})
	if err != nil || got.ID != 101 {
		t.Fatalf("registered %+v, %v; want id 101, after the highest id produced", got, err)
	}
	wantKey := `{"keytype":"SCHEMA","subject":"payments-value","version":1,"magic":1}`
	wantValue := `{"subject":"payments-value","version":1,"id":101,"schemaType":"AVRO","schema":"{\"type\":\"record\",\"name\":\"P\",\"fields\":[]}","deleted":false}`
	for {
		fs := kc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming _schemas: %v", err)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == wantKey {
				found = true
				if string(r.Value) != wantValue {
					t.Errorf("value %s, want %s", r.Value, wantValue)
				}
			}
		})
		if found {
			break
		}
	}
}

// TestSchemaRegistryEveryBrokerServes: every broker serves reads from its
// replay of _schemas and takes writes, one broker writing (the leader of
// its partition) and the other forwarding to it, and ids stay unique
// after the writer stops and the other broker takes over.
func TestSchemaRegistryEveryBrokerServes(t *testing.T) {
	etcd, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	ep := etcd.Endpoints()[0]
	// Broker 2 is up before broker 1's registry creates _schemas, so that
	// the topic gets both as replicas; then it serves the registry too.
	n2 := testutil.StartBroker(t, map[string]string{"node.id": "2", "etcd.endpoints": ep})
	n1 := testutil.StartBroker(t, map[string]string{"node.id": "1", "etcd.endpoints": ep, "samsa.schema.registry.listener": "127.0.0.1:0"})
	ctx := testCtx(t, 2*time.Minute)
	bothInSync := func(adm *kadm.Client) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() error {
			td, err := adm.ListTopics(ctx, "_schemas")
			if err != nil {
				return err
			}
			if p := td["_schemas"].Partitions[0]; len(p.ISR) != 2 {
				return fmt.Errorf("_schemas partition 0: %+v", p)
			}
			return nil
		})
	}
	bothInSync(newAdmin(t, n1.Addr()))
	n2.Overrides["samsa.schema.registry.listener"] = "127.0.0.1:0"
	n2.Restart()
	nodes := []*testutil.Node{n1, n2}
	cls := []*sr.Client{registryClient(t, n1), registryClient(t, n2)}
	// Each broker registers a schema, one itself, the other through it,
	// and reads its own write back at once (CreateSchema reads it).
	ids := map[int]bool{}
	for i, cl := range cls {
		testutil.Eventually(t, 30*time.Second, func() error {
			s, err := cl.CreateSchema(testCtx(t, 10*time.Second), fmt.Sprintf("s%d-value", i), sr.Schema{Schema: fmt.Sprintf(`{"type":"fixed","name":"f","size":%d}`, i+1)})
			if err == nil {
				ids[s.ID] = true
			}
			return err
		})
	}
	if len(ids) != 2 {
		t.Fatalf("ids %v, want two", ids)
	}
	for _, cl := range cls {
		testutil.Eventually(t, 20*time.Second, func() error {
			subjects, err := cl.Subjects(ctx)
			if err == nil && len(subjects) != 2 {
				err = fmt.Errorf("subjects %v", subjects)
			}
			return err
		})
	}
	// The writer goes; the other broker leads _schemas and writes, with
	// the next id. Asked of the restarted broker, whose metadata is newer
	// than its leaving the ISR when it stopped.
	bothInSync(newAdmin(t, n2.Addr()))
	leader := 0
	if md, err := newAdmin(t, n2.Addr()).ListTopics(ctx, "_schemas"); err != nil {
		t.Fatal(err)
	} else if md["_schemas"].Partitions[0].Leader == 2 {
		leader = 1
	}
	nodes[leader].Stop()
	other := cls[1-leader]
	testutil.Eventually(t, 30*time.Second, func() error {
		s, err := other.CreateSchema(testCtx(t, 10*time.Second), "after-value", sr.Schema{Schema: `"long"`})
		if err == nil && ids[s.ID] {
			t.Fatalf("id %d given again after failover", s.ID)
		}
		return err
	})
}

// TestSchemaRegistryPythonAvro: confluent-kafka's SchemaRegistryClient,
// AvroSerializer and AvroDeserializer, producing and consuming through
// samsa with the registry in samsa.
func TestSchemaRegistryPythonAvro(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	runRegistryScript(t, b, "python", "schema_registry.py", "py-avro")
	s, err := cl.SchemaByVersion(testCtx(t, 10*time.Second), "py-avro-value", 2)
	if err != nil || !strings.Contains(s.Schema.Schema, "email") {
		t.Fatalf("py-avro-value v2: %+v, %v", s, err)
	}
}

// TestSchemaRegistryPythonHeaderGUIDs: confluent-kafka's serializers
// with schema.id.serializer = header_schema_id_serializer (Avro key and
// value, JSON Schema, Protobuf) put each schema's GUID, the MD5 of its
// text as Confluent 8.x derives it, in the record's __key_schema_id or
// __value_schema_id header, and the default deserializer reads it back
// through samsa's GET /schemas/guids/{guid}.
func TestSchemaRegistryPythonHeaderGUIDs(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	runRegistryScript(t, b, "python", "schema_registry_guid.py", "py-guid")
}

// TestSchemaRegistryListenerFreedWhenStartFails: the registry's listener,
// bound before the broker registers, is closed when the registration
// fails (here: its node id is taken).
func TestSchemaRegistryListenerFreedWhenStartFails(t *testing.T) {
	etcd, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	ep := etcd.Endpoints()[0]
	testutil.StartBroker(t, map[string]string{"node.id": "1", "etcd.endpoints": ep})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	props, err := config.New(map[string]string{"node.id": "1", "etcd.endpoints": ep, "listeners": "PLAINTEXT://127.0.0.1:0",
		"log.dirs": t.TempDir(), "initial.broker.registration.timeout.ms": "500", "samsa.schema.registry.listener": addr})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Config{Props: props})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err == nil {
		b.Close()
		t.Fatal("a second broker with node id 1 started")
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the registry's listener %s is still bound after the failed start: %v", addr, err)
	}
	ln.Close()
}

// TestSchemaRegistryPythonProtobufJSON: confluent-kafka's
// ProtobufSerializer and JSONSerializer register and evolve schemas under
// Confluent's Protobuf and JSON Schema rules (a field's kind changed
// refused, a property added to an open content model refused), and their
// deserializers read what went through samsa (the Protobuf one asking for
// ?format=serialized).
func TestSchemaRegistryPythonProtobufJSON(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	runRegistryScript(t, b, "python", "schema_registry_formats.py", "py-formats")
}

// TestSchemaRegistryNodeSerdes: Confluent's Node client
// (@confluentinc/schemaregistry) with its Avro (schema derived and
// registered by the serializer, then evolved), Protobuf (descriptors
// registered by the serializer) and JSON Schema serdes, producing and
// consuming through samsa with kafkajs; with HeaderSchemaIdSerializer,
// the schema's GUID in the __value_schema_id header, read back through
// GET /schemas/guids/{guid}; what it registered is then read through
// samsa's REST API.
func TestSchemaRegistryNodeSerdes(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	runRegistryScript(t, b, "node", "schema_registry.js", "node-sr")
	ctx := testCtx(t, 10*time.Second)
	for subject, want := range map[string]string{
		"node-sr-avro-value":  "email",
		"node-sr-proto-value": "email", // a FileDescriptorProto, in base64
		"node-sr-json-value":  "integer",
	} {
		s, err := cl.SchemaByVersion(ctx, subject, 2)
		if err != nil {
			t.Fatalf("%s v2: %v", subject, err)
		}
		byID, err := cl.SchemaByID(ctx, s.ID)
		if err != nil || byID.Schema != s.Schema.Schema {
			t.Fatalf("%s v2 is id %d: by id %q (%v), by version %q", subject, s.ID, byID.Schema, err, s.Schema.Schema)
		}
		text := s.Schema.Schema
		if b, err := base64.StdEncoding.DecodeString(text); err == nil {
			text = string(b)
		}
		if !strings.Contains(text, want) {
			t.Errorf("%s v2: %q, want %q in it", subject, s.Schema.Schema, want)
		}
	}
}

// runRegistryScript runs compat/LANG/script (LANG python or node) against
// broker b and its registry (with name, for the topics it makes), which
// must print ok last.
func runRegistryScript(t *testing.T, b *testutil.Node, lang, script, name string) {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	interp := "node"
	if lang == "python" {
		interp = venvPython(t, root)
	} else if _, err := os.Stat(filepath.Join(root, "compat", "node", "node_modules", "@confluentinc", "schemaregistry")); err != nil {
		t.Fatalf("no @confluentinc/schemaregistry: run make node-deps (make test does): %v", err)
	}
	cmd := exec.CommandContext(testCtx(t, 2*time.Minute), interp, filepath.Join(root, "compat", lang, script),
		b.Addr(), "http://"+b.RegistryAddr(), name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	got := strings.TrimSpace(string(out))
	if !strings.HasSuffix(got, "ok") {
		t.Fatalf("%s printed:\n%s", script, got)
	}
	t.Logf("%s", got)
}
