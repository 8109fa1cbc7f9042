package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// A KRaft configuration names the etcd members (the voters) and the
// listener the controller serves them on; without a quorum, or with
// etcd.endpoints, nothing changes.
func TestQuorum(t *testing.T) {
	combined := map[string]string{
		"node.id":                        "2",
		"process.roles":                  "broker,controller",
		"controller.quorum.voters":       "1@kafka-1:9093,2@kafka-2:9093,3@[::1]:9093",
		"controller.listener.names":      "CONTROLLER",
		"listeners":                      "PLAINTEXT://:9092,CONTROLLER://:9093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	}
	q, ok := mustNew(t, combined).Quorum()
	if !ok || !q.Controller || len(q.Voters) != 3 || q.Voters[1] != (Voter{ID: 2, Host: "kafka-2", Port: 9093}) ||
		q.Voters[2].Addr() != "[::1]:9093" || q.Listener.Name != "CONTROLLER" || q.Listener.Addr() != ":9093" {
		t.Errorf("combined: %+v %v", q, ok)
	}
	if ign := mustNew(t, combined).Ignored(); slices.Contains(ign, "process.roles") || slices.Contains(ign, "controller.quorum.voters") {
		t.Errorf("ignored %v", ign)
	}

	// No controller listener in listeners: the node's voter port.
	noLn := maps.Clone(combined)
	noLn["listeners"] = "PLAINTEXT://:9092"
	if q, _ := mustNew(t, noLn).Quorum(); q.Listener.Addr() != ":9093" {
		t.Errorf("derived listener %+v", q.Listener)
	}

	broker := maps.Clone(combined)
	broker["process.roles"] = "broker"
	broker["node.id"] = "4"
	broker["listeners"] = "PLAINTEXT://:9092"
	if q, ok := mustNew(t, broker).Quorum(); !ok || q.Controller || len(q.Voters) != 3 {
		t.Errorf("broker only: %+v %v", q, ok)
	}
	delete(broker, "controller.quorum.voters")
	broker["controller.quorum.bootstrap.servers"] = "kafka-1:9093,kafka-2:9093"
	if q, ok := mustNew(t, broker).Quorum(); !ok || q.Controller || len(q.Voters) != 2 || q.Voters[0].ID != -1 {
		t.Errorf("broker with bootstrap servers: %+v %v", q, ok)
	}

	standalone := maps.Clone(combined)
	delete(standalone, "controller.quorum.voters")
	standalone["controller.quorum.bootstrap.servers"] = "localhost:9093"
	if q, ok := mustNew(t, standalone).Quorum(); !ok || len(q.Voters) != 1 || q.Voters[0].ID != 2 {
		t.Errorf("standalone: %+v %v", q, ok)
	}

	external := maps.Clone(combined)
	external["etcd.endpoints"] = "http://etcd:2379"
	p := mustNew(t, external)
	if _, ok := p.Quorum(); ok {
		t.Error("quorum with etcd.endpoints")
	}
	if ign := p.Ignored(); !slices.Contains(ign, "process.roles") || !slices.Contains(ign, "controller.quorum.voters") {
		t.Errorf("with etcd.endpoints, ignored %v", ign)
	}
	if _, ok := mustNew(t, map[string]string{"process.roles": "broker,controller"}).Quorum(); ok {
		t.Error("quorum without voters")
	}

	for _, tt := range []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"node.id": "9"}, "node.id 9 is not a voter"},
		{map[string]string{"controller.listener.names": ""}, "controller.listener.names"},
		{map[string]string{"controller.quorum.voters": "1@kafka-1"}, "expected host:port"},
		{map[string]string{"controller.quorum.voters": "x@kafka-1:1"}, "invalid id"},
		{map[string]string{"controller.quorum.voters": "2@a:1,2@b:1"}, "given twice"},
		{map[string]string{"controller.quorum.voters": "", "controller.quorum.bootstrap.servers": "a:1,b:2"}, "from controller.quorum.voters"},
	} {
		set := maps.Clone(combined)
		for k, v := range tt.set {
			set[k] = v
		}
		if _, err := New(set); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v, want %q", tt.set, err, tt.want)
		}
	}
}
