package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// wantRack checks a reported rack: none for "".
func wantRack(t *testing.T, what string, got *string, want string) {
	t.Helper()
	if (got == nil) != (want == "") || got != nil && *got != want {
		t.Errorf("%s: rack %v, want %q", what, got, want)
	}
}

// broker.rack is registered in etcd, and Metadata and DescribeCluster
// report it; a broker without one reports none.
func TestBrokerRackRegistered(t *testing.T) {
	for _, rack := range []string{"rack-1", ""} {
		overrides := map[string]string{}
		if rack != "" {
			overrides["broker.rack"] = rack
		}
		n := testutil.StartBroker(t, overrides)
		cl := newKgo(t, n.Addr())
		md, err := kadm.NewClient(cl).BrokerMetadata(testCtx(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) != 1 {
			t.Fatalf("brokers %v", md.Brokers)
		}
		wantRack(t, "Metadata", md.Brokers[0].Rack, rack)
		dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(dc.Brokers) != 1 {
			t.Fatalf("DescribeCluster brokers %v", dc.Brokers)
		}
		wantRack(t, "DescribeCluster", dc.Brokers[0].Rack, rack)
	}
}
