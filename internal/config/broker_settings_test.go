package config

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

// Every tagged field of BrokerSettings names a property samsa defines, of
// a type that fits the field; and no property is decoded twice.
func TestBrokerSettingsTags(t *testing.T) {
	seen := map[string]string{}
	typ := reflect.TypeFor[BrokerSettings]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, unit, ok := settingTag(f)
		if !ok {
			continue
		}
		d, defined := brokerIndex[name]
		switch {
		case !defined:
			t.Errorf("BrokerSettings.%s: property %q is not defined", f.Name, name)
			continue
		case d.Ignored:
			t.Errorf("BrokerSettings.%s: property %q is marked Ignored but samsa reads it", f.Name, name)
		case seen[name] != "":
			t.Errorf("BrokerSettings.%s: property %q also decoded into %s", f.Name, name, seen[name])
		}
		seen[name] = f.Name
		if f.Type == reflect.TypeFor[time.Duration]() && durationUnits[unit] == 0 {
			t.Errorf("BrokerSettings.%s: duration without a unit", f.Name)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d tagged fields", len(seen))
	}
}

func TestBrokerSettingsDecode(t *testing.T) {
	p := mustNew(t, map[string]string{
		"broker.rack":                "rack-a",
		"connections.max.idle.ms":    "1500",
		"offsets.retention.minutes":  "2",
		"default.replication.factor": "3",
		"etcd.endpoints":             "http://a:1, http://b:2",
		"socket.send.buffer.bytes":   "102400",
		"samsa.fetch.sendfile":       "false",
	})
	s := p.Settings()
	if s.Rack != "rack-a" || s.ConnectionsMaxIdle != 1500*time.Millisecond || s.OffsetsRetention != 2*time.Minute ||
		s.DefaultReplicationFactor != 3 || !slices.Equal(s.EtcdEndpoints, []string{"http://a:1", "http://b:2"}) ||
		s.SocketSendBufferBytes != 102400 || s.SocketReceiveBufferBytes != -1 || s.Sendfile {
		t.Errorf("settings %+v", s)
	}
	if s.NodeID != 1 || s.InitialRegistrationTimeout != time.Minute || s.LeaderImbalanceCheckInterval != 300*time.Second ||
		s.ProducerIDExpirationMs != 86400000 || len(s.Listeners) != 1 || len(s.AdvertisedListeners) != 1 {
		t.Errorf("defaults %+v", s)
	}
	if _, err := New(map[string]string{"default.replication.factor": "40000"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("default.replication.factor=40000: %v", err)
	}
}
