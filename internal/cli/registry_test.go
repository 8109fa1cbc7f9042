package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestRegistryCommands: samsa registry against a broker's registry:
// register from a file, list, get, check (exit 1 when incompatible),
// compatibility get and set, delete.
func TestRegistryCommands(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"samsa.schema.registry.listener": "127.0.0.1:0"})
	url := "http://" + n.RegistryAddr()
	dir := t.TempDir()
	write := func(name, schema string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(schema), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := write("v1.avsc", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`)
	v2 := write("v2.avsc", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}`)
	bad := write("bad.avsc", `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`)
	reg := func(args ...string) []string {
		return append(append([]string{"registry"}, args...), "--registry-url", url)
	}
	// The registry takes writes once its writer has loaded _schemas.
	poll.Eventually(t, 30*time.Second, func() error {
		if code, _, errOut := samsa(t, n.Addr(), "", reg("register", "orders-value", "--file", v1)...); code != 0 {
			return fmt.Errorf("register v1: exit %d: %s", code, errOut)
		}
		return nil
	})
	if out := ok(t, n.Addr(), "", reg("register", "orders-value", "--file", v2)...); !row(out, "orders-value", "2", "2") {
		t.Fatalf("register v2:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("subjects")...); !row(out, "orders-value") {
		t.Fatalf("subjects:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("versions", "orders-value")...); !row(out, "1", "1", "AVRO") || !row(out, "2", "2", "AVRO") {
		t.Fatalf("versions:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("get", "orders-value", "1")...); !strings.Contains(out, `"name":"a"`) || !row(out, "VERSION", "1") {
		t.Fatalf("get:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("get", "--id", "2", "--format", "json")...); !strings.Contains(out, `"id": 2`) {
		t.Fatalf("get --id:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("check", "orders-value", "--file", v2)...); !row(out, "COMPATIBLE", "true") {
		t.Fatalf("check v2:\n%s", out)
	}
	code, out, _ := samsa(t, n.Addr(), "", reg("check", "orders-value", "--file", bad)...)
	if code != 1 || !row(out, "COMPATIBLE", "false") {
		t.Fatalf("check bad: exit %d\n%s", code, out)
	}
	if out := ok(t, n.Addr(), "", reg("compatibility", "set", "full", "--subject", "orders-value")...); !row(out, "orders-value", "FULL") {
		t.Fatalf("compatibility set:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("compatibility", "get")...); !row(out, "-", "BACKWARD") {
		t.Fatalf("compatibility get:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("delete", "orders-value", "2")...); !row(out, "2") {
		t.Fatalf("delete version:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("delete", "orders-value")...); !row(out, "1") {
		t.Fatalf("delete subject:\n%s", out)
	}
	if out := ok(t, n.Addr(), "", reg("subjects")...); row(out, "orders-value") {
		t.Fatalf("subjects after delete:\n%s", out)
	}
	if code, _, _ := samsa(t, n.Addr(), "", reg("get")...); code != 2 {
		t.Fatalf("get without a subject: exit %d, want 2", code)
	}
}
