package config

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's precedence: a broker's own dynamic config, then the cluster-wide
// default, then the static properties, then the default; DescribeConfigs
// lists them in that order as synonyms.
func TestWithDynamicLayers(t *testing.T) {
	p, err := New(map[string]string{"log.retention.hours": "48"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.WithDynamic(map[string]string{"log.retention.ms": "1000"}, map[string]string{"log.retention.minutes": "5"})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.TopicConfigs(nil)["retention.ms"]; got != "1000" {
		// log.retention.ms outranks log.retention.minutes as a synonym,
		// whatever the layer: Kafka's KafkaConfig resolves synonyms first.
		t.Errorf("retention.ms %s, want 1000", got)
	}
	var entry Entry
	for _, e := range q.DescribeBroker(true, false) {
		if e.Name == "log.retention.minutes" {
			entry = e
		}
	}
	if entry.Source != int8(kmsg.ConfigSourceDynamicBrokerConfig) || len(entry.Synonyms) == 0 {
		t.Fatalf("log.retention.minutes: %+v", entry)
	}
	var sources []int8
	for _, s := range entry.Synonyms {
		sources = append(sources, s.Source)
	}
	want := []int8{srcDynBroker, srcDynDefault, srcStatic, srcDefault}
	if len(sources) < len(want) {
		t.Fatalf("synonyms %+v", entry.Synonyms)
	}
	for i := range want {
		if sources[i] != want[i] {
			t.Errorf("synonym %d from %d, want %d (%+v)", i, sources[i], want[i], entry.Synonyms)
		}
	}
	if d := q.DescribeBrokerDefault(true, false); len(d) != 1 || d[0].Name != "log.retention.ms" || d[0].Source != srcDynDefault {
		t.Errorf("the cluster-wide default describes %+v, want only log.retention.ms", d)
	}
	// Taking the layers away again.
	r, err := q.WithDynamic(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.TopicConfigs(nil)["retention.ms"]; got != "172800000" {
		t.Errorf("without dynamic configs retention.ms %s, want the static 48 h", got)
	}
}

func TestValidateDynamic(t *testing.T) {
	for _, tt := range []struct {
		configs        map[string]string
		clusterDefault bool
		want           error
	}{
		{map[string]string{"log.retention.ms": "1"}, true, nil},
		{map[string]string{"log.dirs": "/x"}, false, ErrNotDynamic},
		{map[string]string{"listeners": "PLAINTEXT://:1"}, true, ErrNotDynamic},
		{map[string]string{"listener.name.external.ssl.keystore.location": "/k"}, false, nil},
		{map[string]string{"no.such": "1"}, false, ErrUnknownConfig},
	} {
		if err := ValidateDynamic(tt.configs, tt.clusterDefault); !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
			t.Errorf("%v (default %v): %v, want %v", tt.configs, tt.clusterDefault, err, tt.want)
		}
	}
}
