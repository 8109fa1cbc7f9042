package broker

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
	"github.com/samsa-io/samsa/security"
)

// TestEveryAPIDeclaresAuthorization walks the dispatch table: every key
// served declares what it authorizes, checked before its handler or in
// it; only the keys served before a principal is known declare nothing.
func TestEveryAPIDeclaresAuthorization(t *testing.T) {
	nothing := []kmsg.Key{kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate}
	anyone := []kmsg.Key{kmsg.GetTelemetrySubscriptions, kmsg.PushTelemetry}
	for key, h := range handlers {
		switch az := h.access; {
		case az == nil:
			t.Errorf("%s declares no authorization: add an access to its entry in dispatch.go", key.Name())
		case az == noAccess:
			if !slices.Contains(nothing, key) {
				t.Errorf("%s declares that it authorizes nothing", key.Name())
			}
		case az == anyPrincipal:
			if !slices.Contains(anyone, key) {
				t.Errorf("%s declares that every principal may use it", key.Name())
			}
		case az.check == nil && !az.inHandler:
			t.Errorf("%s declares %v but neither a check nor one in its handler", key.Name(), az.needs)
		case az.clusterPass != 0 && !slices.Contains(az.needs, clusterOp(az.clusterPass)):
			t.Errorf("%s passes with %v on the cluster, which its needs %v leave out", key.Name(), az.clusterPass, az.needs)
		}
	}
}

// TestUndeclaredAPIServedToSuperUsersOnly: with an authorizer, a key
// without a declaration is refused (the connection closed) to everyone
// but super users, even where no ACL would refuse it.
func TestUndeclaredAPIServedToSuperUsersOnly(t *testing.T) {
	b := &Broker{authz: security.NewAuthorizer("User:admin", true)}
	served := 0
	serve := func(*Broker, context.Context, *request) (kmsg.Response, error) {
		served++
		return kmsg.NewPtrApiVersionsResponse(), nil
	}
	undeclared := handler{serve: serve}
	declared := handler{serve: serve, access: &access{needs: []need{topicOp(security.OpRead)}, inHandler: true}}
	for _, tc := range []struct {
		principal string
		h         handler
		refused   bool
	}{
		{"User:alice", undeclared, true},
		{"User:admin", undeclared, false},
		{"User:alice", declared, false},
	} {
		served = 0
		r := &request{hdr: protocol.Header{Key: int16(kmsg.ApiVersions)}, principal: tc.principal}
		resp, err := b.serveAuthorized(context.Background(), r, tc.h)
		if tc.refused {
			if !errors.Is(err, errCloseConn) || resp != nil || served != 0 {
				t.Errorf("%s, declared %v: err %v, response %v, served %d times; want refused", tc.principal, tc.h.access != nil, err, resp, served)
			}
			continue
		}
		if err != nil || resp == nil || served != 1 {
			t.Errorf("%s, declared %v: err %v, response %v, served %d times; want served", tc.principal, tc.h.access != nil, err, resp, served)
		}
	}
}
