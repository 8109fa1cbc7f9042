package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Quorum is how a KRaft configuration is read: the controller quorum of
// Kafka (process.roles, controller.quorum.voters or
// controller.quorum.bootstrap.servers, controller.listener.names) becomes
// an etcd cluster. A node whose roles include controller runs one etcd
// member in its process, its peers being the other voters, all reached on
// their controller listener; a node with the broker role only is a client
// of the voters' etcd. Set only when etcd.endpoints is empty and a voter
// or bootstrap server is given.
type Quorum struct {
	// Controller is set when process.roles includes controller.
	Controller bool
	// Voters are the etcd members: controller.quorum.voters, or, from a
	// single controller.quorum.bootstrap.servers entry, this node alone
	// (Kafka's standalone controller). A broker-only node given bootstrap
	// servers has them here with ID -1.
	Voters []Voter
	// Listener is the controller listener to bind: the first of
	// controller.listener.names found in listeners, else this node's port
	// among the voters on every interface. Only for Controller.
	Listener Listener
}

// Voter is one entry of controller.quorum.voters, id@host:port.
type Voter struct {
	ID   int32 // -1 for a bootstrap server
	Host string
	Port int32
}

// Addr returns host:port.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(int(v.Port))) }

// Quorum returns the KRaft quorum this node belongs to, and false when it
// keeps to samsa's own ways (etcd.endpoints, or an embedded single etcd
// member on loopback when nothing names a quorum).
func (p *Props) Quorum() (Quorum, bool) {
	if p.quorum == nil {
		return Quorum{}, false
	}
	q := *p.quorum
	q.Voters = slices.Clone(q.Voters)
	return q, true
}

// parseVoters parses controller.quorum.voters: id@host:port entries.
func parseVoters(v string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, e := range splitList(v) {
		idStr, addr, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("voter %q: expected id@host:port", e)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("voter %q: invalid id %q", e, idStr)
		}
		vt, err := parseHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("voter %q: %v", e, err)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("voter %q: id %d given twice", e, id)
		}
		seen[int32(id)] = true
		vt.ID = int32(id)
		out = append(out, vt)
	}
	return out, nil
}

func parseHostPort(addr string) (Voter, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return Voter{}, fmt.Errorf("expected host:port, got %q", addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return Voter{}, fmt.Errorf("invalid port %q", portStr)
	}
	return Voter{ID: -1, Host: host, Port: int32(port)}, nil
}

func checkVoters(v string) error {
	_, err := parseVoters(v)
	return err
}

func checkBootstrapServers(v string) error {
	for _, e := range splitList(v) {
		if _, err := parseHostPort(e); err != nil {
			return err
		}
	}
	return nil
}

// checkQuorum reads the KRaft properties into p.quorum (see Quorum), with
// Kafka's rules for them: a controller is one of the voters and binds a
// controller listener.
func (p *Props) checkQuorum() []error {
	if len(p.List("etcd.endpoints")) > 0 {
		return nil
	}
	voters, _ := parseVoters(p.String("controller.quorum.voters"))
	bootstrap := p.List("controller.quorum.bootstrap.servers")
	if len(voters) == 0 && len(bootstrap) == 0 {
		return nil
	}
	q := &Quorum{Controller: slices.Contains(p.List("process.roles"), "controller"), Voters: voters}
	if !q.Controller {
		if len(q.Voters) == 0 {
			for _, b := range bootstrap {
				v, _ := parseHostPort(b)
				q.Voters = append(q.Voters, v)
			}
		}
		p.quorum = q
		return nil
	}
	id := p.NodeID()
	if len(q.Voters) == 0 {
		// Kafka's standalone controller (kafka-storage.sh format
		// --standalone): a single bootstrap server, this node.
		if len(bootstrap) > 1 {
			return []error{p.invalid("controller.quorum.bootstrap.servers", "samsa forms a quorum of several controllers from controller.quorum.voters (id@host:port), which is not set")}
		}
		v, _ := parseHostPort(bootstrap[0])
		v.ID = id
		q.Voters = []Voter{v}
	} else if !slices.ContainsFunc(q.Voters, func(v Voter) bool { return v.ID == id }) {
		return []error{p.invalid("controller.quorum.voters", "node.id %d is not a voter, and process.roles includes controller", id)}
	}
	names := p.List("controller.listener.names")
	if len(names) == 0 {
		return []error{p.invalid("controller.listener.names", "must be set when process.roles includes controller")}
	}
	ls, _ := parseListeners(p.String("listeners"))
	for _, n := range names {
		if i := slices.IndexFunc(ls, func(l Listener) bool { return l.Name == strings.ToUpper(n) }); i >= 0 {
			q.Listener = ls[i]
			p.quorum = q
			return nil
		}
	}
	// No controller listener in listeners (the apache/kafka image derives
	// listeners from advertised.listeners, which name no controller): the
	// port this node has among the voters, on every interface.
	self := q.Voters[slices.IndexFunc(q.Voters, func(v Voter) bool { return v.ID == id })]
	q.Listener = Listener{Name: strings.ToUpper(names[0]), Host: "", Port: self.Port, Protocol: "PLAINTEXT"}
	p.quorum = q
	return nil
}
