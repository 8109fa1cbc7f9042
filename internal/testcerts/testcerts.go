// Package testcerts makes certificate authorities and certificates for
// tests, in memory (crypto/x509, ECDSA P-256): no key is ever committed.
// It writes them as PEM, PKCS12 and JKS stores, the forms Kafka reads.
package testcerts

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// CA is a self-signed certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Leaf is a certificate issued by a CA, with its key.
type Leaf struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	CA   *CA
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(time.Now().UnixNano() + serial.Add(1)) }

// NewCA makes a certificate authority named cn.
func NewCA(tb testing.TB, cn string) *CA {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"samsa tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	cert, key := sign(tb, tmpl, nil, nil)
	return &CA{Cert: cert, key: key}
}

// Issue makes a certificate for subject, valid for server and client
// authentication on localhost and 127.0.0.1; edit, when not nil, changes
// the template first (validity, names).
func (ca *CA) Issue(tb testing.TB, subject pkix.Name, edit func(*x509.Certificate)) *Leaf {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	if edit != nil {
		edit(tmpl)
	}
	cert, key := sign(tb, tmpl, ca.Cert, ca.key)
	return &Leaf{Cert: cert, Key: key, CA: ca}
}

// sign makes a P-256 key and the certificate of tmpl for it, signed by
// parent's key, or by the new key itself when parent is nil.
func sign(tb testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return cert, key
}

// CertPEM is the CA's certificate in PEM.
func (ca *CA) CertPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
}

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CertPEM is the leaf's chain (leaf, then CA) in PEM.
func (l *Leaf) CertPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw})) + l.CA.CertPEM()
}

// KeyPEM is the leaf's key, unencrypted PKCS#8 in PEM.
func (l *Leaf) KeyPEM(tb testing.TB) string {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		tb.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TLSCertificate is the leaf as a tls.Certificate (for a client).
func (l *Leaf) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw, l.CA.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
}

// PKCS12 encodes the leaf, its key and its CA in a PKCS12 keystore.
func (l *Leaf) PKCS12(tb testing.TB, password string) []byte {
	tb.Helper()
	b, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.CA.Cert}, password)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// JKS encodes the leaf and its key as Java's JKS keystore, the key
// protected with keyPassword.
func (l *Leaf) JKS(tb testing.TB, storePassword, keyPassword string) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		tb.Fatal(err)
	}
	ks := keystore.New()
	err = ks.SetPrivateKeyEntry("samsa", keystore.PrivateKeyEntry{
		CreationTime: time.Now(),
		PrivateKey:   der,
		CertificateChain: []keystore.Certificate{
			{Type: "X509", Content: l.Cert.Raw}, {Type: "X509", Content: l.CA.Cert.Raw},
		},
	}, []byte(keyPassword))
	return storeJKS(tb, ks, err, storePassword)
}

// TrustPKCS12 is a PKCS12 trust store holding the CA.
func (ca *CA) TrustPKCS12(tb testing.TB, password string) []byte {
	tb.Helper()
	b, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TrustJKS is a JKS trust store holding the CA.
func (ca *CA) TrustJKS(tb testing.TB, password string) []byte {
	tb.Helper()
	ks := keystore.New()
	err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(),
		Certificate:  keystore.Certificate{Type: "X509", Content: ca.Cert.Raw},
	})
	return storeJKS(tb, ks, err, password)
}

// storeJKS encodes ks, once the entry was set without error.
func storeJKS(tb testing.TB, ks keystore.KeyStore, setErr error, password string) []byte {
	tb.Helper()
	if setErr != nil {
		tb.Fatal(setErr)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// WriteFile writes data to name in dir and returns the path.
func WriteFile(tb testing.TB, dir, name string, data []byte) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Panicking is a testing.TB for programs outside a test (the matrix, the
// benchmark): its Fatal panics with a FatalError, which the caller
// recovers. Only Helper and Fatal may be called on it.
func Panicking() testing.TB { return panicTB{} }

// FatalError is what Panicking's Fatal panics with.
type FatalError struct{ Msg string }

func (e FatalError) Error() string { return e.Msg }

type panicTB struct{ testing.TB }

func (panicTB) Helper()           {}
func (panicTB) Fatal(args ...any) { panic(FatalError{fmt.Sprint(args...)}) }

// Recover turns a FatalError panic into *err; call it deferred.
func Recover(err *error) {
	if p := recover(); p != nil {
		fe, ok := p.(FatalError)
		if !ok {
			panic(p)
		}
		*err = fe
	}
}
