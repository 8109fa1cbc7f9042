package broker_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestCleanShutdownInEveryLogDir: log directories that do not exist yet
// are created at start, as Kafka's LogManager creates them, so that a
// clean shutdown leaves its file in each, also in one that never got a
// partition.
func TestCleanShutdownInEveryLogDir(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	n := testutil.StartBroker(t, map[string]string{"log.dirs": dirs[0] + "," + dirs[1]})
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("log dir %s after start: %v", d, err)
		}
	}
	if err := n.Broker.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, ".kafka_cleanshutdown")); err != nil {
			t.Errorf("clean shutdown file in %s: %v", d, err)
		}
	}
}
