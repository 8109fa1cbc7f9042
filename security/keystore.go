package security

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Key material as Kafka takes it (ssl.keystore.type, ssl.truststore.type):
//
//	PEM     ssl.keystore.certificate.chain + ssl.keystore.key inline, or
//	        ssl.keystore.location naming a file holding the key and the chain;
//	        ssl.truststore.certificates inline or ssl.truststore.location
//	PKCS12  ssl.keystore.location with ssl.keystore.password (and
//	        ssl.key.password, defaulting to the store's password)
//	JKS     the same, read as Java's JKS format; the first private-key
//	        entry is the key, every trusted-certificate entry is trusted
//
// JKS and PKCS12 name either format: a file is read in the format its
// first bytes show, as Java (9 on, keystore.type.compat) reads a PKCS12
// file for a JKS store and the reverse, and Kafka with it. Tools write
// PKCS12 files for configurations left at the default type, JKS.

// jksMagic opens a JKS file; a PKCS12 file is a DER SEQUENCE (0x30).
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// storeFormat is the format of a JKS or PKCS12 store's bytes, typ (the
// configured type) when they show neither.
func storeFormat(typ string, data []byte) string {
	if typ != "JKS" && typ != "PKCS12" {
		return typ
	}
	switch {
	case bytes.HasPrefix(data, jksMagic):
		return "JKS"
	case len(data) > 0 && data[0] == 0x30:
		return "PKCS12"
	}
	return typ
}

// loadKeyPair returns the broker's certificate and key.
func loadKeyPair(c TLSConfig) (tls.Certificate, error) {
	typ := strings.ToUpper(c.KeystoreType)
	if typ == "" {
		typ = "JKS"
	}
	keyPass := c.KeyPassword
	if keyPass == "" {
		keyPass = c.KeystorePassword
	}
	switch {
	case typ == "PEM" && c.KeystoreCertChain != "":
		return pemKeyPair([]byte(c.KeystoreCertChain), []byte(c.KeystoreKey), keyPass)
	case c.KeystoreLocation == "":
		return tls.Certificate{}, errors.New("ssl.keystore.location (or, with ssl.keystore.type=PEM, ssl.keystore.certificate.chain and ssl.keystore.key) is required")
	}
	data, err := os.ReadFile(c.KeystoreLocation)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	switch storeFormat(typ, data) {
	case "PEM":
		return pemKeyPair(data, data, keyPass)
	case "PKCS12":
		key, leaf, chain, err := pkcs12.DecodeChain(data, c.KeystorePassword)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("PKCS12 keystore %s: %w", c.KeystoreLocation, err)
		}
		out := tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
		for _, ca := range chain {
			out.Certificate = append(out.Certificate, ca.Raw)
		}
		return out, nil
	case "JKS":
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(c.KeystorePassword)); err != nil {
			return tls.Certificate{}, fmt.Errorf("JKS keystore %s: %w", c.KeystoreLocation, err)
		}
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPass))
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("JKS keystore %s, entry %q: %w", c.KeystoreLocation, alias, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("JKS keystore %s, entry %q: %w", c.KeystoreLocation, alias, err)
			}
			out := tls.Certificate{PrivateKey: key}
			for _, cert := range e.CertificateChain {
				out.Certificate = append(out.Certificate, cert.Content)
			}
			if len(out.Certificate) == 0 {
				return tls.Certificate{}, fmt.Errorf("JKS keystore %s, entry %q: no certificate", c.KeystoreLocation, alias)
			}
			out.Leaf, err = x509.ParseCertificate(out.Certificate[0])
			return out, err
		}
		return tls.Certificate{}, fmt.Errorf("JKS keystore %s: no private key entry", c.KeystoreLocation)
	}
	return tls.Certificate{}, fmt.Errorf("ssl.keystore.type %q: samsa reads JKS, PKCS12 and PEM", c.KeystoreType)
}

// pemKeyPair parses a PEM chain and a PEM key (PKCS#8, PKCS#1 or SEC 1).
// An encrypted PKCS#8 key is decrypted with password (PBES2).
func pemKeyPair(chain, keyPEM []byte, password string) (tls.Certificate, error) {
	var out tls.Certificate
	var key crypto.PrivateKey
	var err error
	for rest := keyPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch b.Type {
		case "ENCRYPTED PRIVATE KEY":
			der, derr := decryptPKCS8(b.Bytes, []byte(password))
			if derr != nil {
				return out, fmt.Errorf("PEM key: %w", derr)
			}
			key, err = x509.ParsePKCS8PrivateKey(der)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return out, fmt.Errorf("PEM key: %w", err)
		}
		break
	}
	if key == nil {
		return out, errors.New("PEM keystore: no private key")
	}
	certs, err := pemCerts(chain)
	if err != nil {
		return out, err
	}
	if len(certs) == 0 {
		return out, errors.New("PEM keystore: no certificate")
	}
	out.PrivateKey, out.Leaf = key, certs[0]
	for _, c := range certs {
		out.Certificate = append(out.Certificate, c.Raw)
	}
	return out, nil
}

func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM certificate: %w", err)
		}
		out = append(out, c)
	}
}

// loadTrustStore returns the trusted certificates, or nil when no trust
// store is configured (the system's roots apply, as Java's cacerts do).
func loadTrustStore(c TLSConfig) (*x509.CertPool, error) {
	typ := strings.ToUpper(c.TruststoreType)
	if typ == "" {
		typ = "JKS"
	}
	var certs []*x509.Certificate
	switch {
	case typ == "PEM" && c.TruststoreCerts != "":
		var err error
		if certs, err = pemCerts([]byte(c.TruststoreCerts)); err != nil {
			return nil, err
		}
	case c.TruststoreLocation == "":
		return nil, nil
	default:
		data, err := os.ReadFile(c.TruststoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		switch storeFormat(typ, data) {
		case "PEM":
			certs, err = pemCerts(data)
		case "PKCS12":
			certs, err = pkcs12.DecodeTrustStore(data, c.TruststorePassword)
		case "JKS":
			certs, err = jksTrusted(data, c.TruststorePassword)
		default:
			err = fmt.Errorf("ssl.truststore.type %q: samsa reads JKS, PKCS12 and PEM", c.TruststoreType)
		}
		if err != nil {
			return nil, fmt.Errorf("trust store %s: %w", c.TruststoreLocation, err)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("trust store holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, nil
}

func jksTrusted(data []byte, password string) ([]*x509.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsTrustedCertificateEntry(alias) {
			continue
		}
		e, err := ks.GetTrustedCertificateEntry(alias)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		c, err := x509.ParseCertificate(e.Certificate.Content)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		out = append(out, c)
	}
	return out, nil
}
