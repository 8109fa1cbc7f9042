package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
)

// joinQuorum reads a KRaft configuration (config.Quorum): a controller
// runs its member of the voters' etcd cluster in this process, on its
// controller listener, with its data in the first log dir; a broker-only
// node is a client of the voters. It returns the etcd endpoints: this
// process's member first, then every voter.
func (b *Broker) joinQuorum(q config.Quorum) ([]string, error) {
	var endpoints []string
	if q.Controller {
		var members []controller.Member
		for _, v := range q.Voters {
			members = append(members, controller.Member{Name: controller.MemberName(v.ID), Addr: v.Addr()})
		}
		e, err := controller.StartEmbedded(controller.EmbeddedConfig{
			Dir:     filepath.Join(b.logDir, "etcd"),
			Logger:  b.log,
			Members: members,
			Name:    controller.MemberName(b.nodeID),
			Listen:  q.Listener.Addr(),
			// A controller waits for a majority of the voters as long as a
			// broker waits to register with the controller.
			StartTimeout: max(b.settings.InitialRegistrationTimeout, 60*time.Second),
		})
		if err != nil {
			return nil, fmt.Errorf("broker: controller quorum: %w", err)
		}
		b.embedded = e
		endpoints = e.Endpoints()
	}
	for _, v := range q.Voters {
		endpoints = append(endpoints, "http://"+v.Addr())
	}
	return endpoints, nil
}
