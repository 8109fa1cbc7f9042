package chaos

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Run
// with SAMSA_CHAOS_ETCD set, the binary is the suite's etcd helper instead,
// with SAMSA_CHAOS_DELAYER a delayer (nfqueue_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(etcdHelperEnv) != "" {
		os.Exit(runEtcdHelper())
	}
	if os.Getenv(delayerEnv) != "" {
		os.Exit(runDelayer())
	}
	goleak.VerifyTestMain(m)
}
