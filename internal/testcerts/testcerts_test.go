package testcerts

import (
	"crypto/x509/pkix"
	"testing"
)

// Outside a test, Panicking's Fatal panics and Recover turns it back
// into the error; the certificates it makes verify against their CA.
func TestPanickingRecover(t *testing.T) {
	var err error
	func() {
		defer Recover(&err)
		Panicking().Fatal("boom")
	}()
	if err == nil || err.Error() != "boom" {
		t.Fatalf("Recover: %v, want boom", err)
	}
	ca := NewCA(Panicking(), "ca")
	leaf := ca.Issue(Panicking(), pkix.Name{CommonName: "x"}, nil)
	if err := leaf.Cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Error(err)
	}
}
