package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// The registry scenario (doc.go): a client's Confluent-compatible Schema
// Registry serde against the registry samsa's brokers serve.
const (
	scRegistry = "registry"
	// regEnvVar gives the external programs the registry's URL.
	regEnvVar = "SAMSA_MATRIX_REGISTRY"
	// regRecords are produced with each of the two versions.
	regRecords = 10
)

// regSchemas are the scenario's Avro schemas: version 1, version 2 (a
// field added with a default: BACKWARD compatible) and a third that adds
// a field without one (refused). The Python and Node programs have the
// same.
var regSchemas = []string{
	`{"type":"record","name":"User","namespace":"samsa.matrix","fields":[{"name":"name","type":"string"},{"name":"n","type":"int"}]}`,
	`{"type":"record","name":"User","namespace":"samsa.matrix","fields":[{"name":"name","type":"string"},{"name":"n","type":"int"},{"name":"email","type":"string","default":""}]}`,
	`{"type":"record","name":"User","namespace":"samsa.matrix","fields":[{"name":"name","type":"string"},{"name":"n","type":"int"},{"name":"email","type":"string","default":""},{"name":"phone","type":"string"}]}`,
}

// withRegistry adds the registry scenario to a row's scenarios.
func withRegistry(s []string) []string { return append(slices.Clone(s), scRegistry) }

// withoutRegistry drops the registry scenario from jobs (a broker with no
// registry: Apache Kafka, or one the harness did not start).
func withoutRegistry(jobs []job) []job { return withoutScenarios(jobs, scRegistry) }

// regUserV1 and regUserV2 are the records of regSchemas[0] and [1].
type regUserV1 struct {
	Name string `avro:"name"`
	N    int    `avro:"n"`
}

type regUserV2 struct {
	Name  string `avro:"name"`
	N     int    `avro:"n"`
	Email string `avro:"email"`
}

// franzRegistry: franz-go's pkg/sr client and Serde (hamba/avro encoding).
func franzRegistry(ctx context.Context, e *env) error {
	if e.registry == "" {
		return errors.New("no schema registry in this run")
	}
	rc, err := sr.NewClient(sr.URLs(e.registry))
	if err != nil {
		return err
	}
	topic := e.prefix + "-" + scRegistry
	subject := topic + "-value"
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	if err := franzCreateTopic(ctx, adm, topic, 1, nil); err != nil {
		return err
	}
	cl, err := franzClient(e, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	var serde sr.Serde
	var ids []int
	for v, value := range []func(i int) any{
		func(i int) any { return regUserV1{Name: fmt.Sprintf("user-%d", i), N: i} },
		func(i int) any {
			return regUserV2{Name: fmt.Sprintf("user-%d", i), N: i, Email: fmt.Sprintf("user-%d@example.org", i)}
		},
	} {
		s, err := rc.CreateSchema(ctx, subject, sr.Schema{Schema: regSchemas[v]})
		if err != nil {
			return fmt.Errorf("register version %d: %w", v+1, err)
		}
		as, err := avro.Parse(regSchemas[v])
		if err != nil {
			return err
		}
		ids = append(ids, s.ID)
		serde.Register(s.ID, value(0),
			sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(as, v) }),
			sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(as, b, v) }))
		for i := v * regRecords; i < (v+1)*regRecords; i++ {
			b, err := serde.Encode(value(i))
			if err != nil {
				return err
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: b}).FirstErr(); err != nil {
				return fmt.Errorf("produce %d: %w", i, err)
			}
		}
	}
	_, err = rc.CreateSchema(ctx, subject, sr.Schema{Schema: regSchemas[2]})
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 409 {
		return fmt.Errorf("version 3 (a field without a default) registered: %v, want a 409", err)
	}
	if vs, err := rc.SubjectVersions(ctx, subject); err != nil || !slices.Equal(vs, []int{1, 2}) {
		return fmt.Errorf("versions of %s: %v (%v), want [1 2]", subject, vs, err)
	}
	rctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	var got []any
	for len(got) < 2*regRecords {
		fs := cl.PollFetches(rctx)
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("read %d of %d: %w", len(got), 2*regRecords, err)
		}
		for _, r := range fs.Records() {
			i := len(got)
			if len(r.Value) < 5 || r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != ids[i/regRecords] {
				return fmt.Errorf("record %d: header % x, want magic 0 and id %d", i, r.Value[:min(5, len(r.Value))], ids[i/regRecords])
			}
			v, err := serde.DecodeNew(r.Value)
			if err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
			got = append(got, v)
		}
	}
	for i, v := range got {
		want := any(&regUserV1{Name: fmt.Sprintf("user-%d", i), N: i})
		if i >= regRecords {
			want = &regUserV2{Name: fmt.Sprintf("user-%d", i), N: i, Email: fmt.Sprintf("user-%d@example.org", i)}
		}
		if fmt.Sprint(v) != fmt.Sprint(want) {
			return fmt.Errorf("record %d: %+v, want %+v", i, v, want)
		}
	}
	return nil
}
