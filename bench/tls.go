package main

import (
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/samsa-io/samsa/internal/testcerts"
)

// tlsSetup is the SSL listener both brokers get for the tls section: a
// certificate from a CA made for the run (nothing committed), no client
// certificates. The clients trust the CA: samsa-bench through -tls-ca,
// the Java tools through a --command-config file.
type tlsSetup struct {
	props    map[string]string // the broker's SSL listener settings
	caFile   string            // the CA in PEM
	javaConf string            // security.protocol=SSL and the PEM trust store
}

func newTLS(dir string) (t *tlsSetup, err error) {
	defer testcerts.Recover(&err)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tb := testcerts.Panicking()
	ca := testcerts.NewCA(tb, "samsa bench CA")
	leaf := ca.Issue(tb, pkix.Name{CommonName: "localhost"}, nil)
	caFile := testcerts.WriteFile(tb, dir, "ca.pem", []byte(ca.CertPEM()))
	conf := fmt.Sprintf("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n", caFile)
	return &tlsSetup{
		props: map[string]string{
			"ssl.keystore.type":              "PEM",
			"ssl.keystore.certificate.chain": leaf.CertPEM(),
			"ssl.keystore.key":               leaf.KeyPEM(tb),
		},
		caFile:   caFile,
		javaConf: testcerts.WriteFile(tb, dir, "java-ssl.properties", []byte(conf)),
	}, nil
}

// samsaArgs are the --override flags of the SSL listener's settings.
func (t *tlsSetup) samsaArgs() []string {
	var a []string
	for _, k := range slices.Sorted(maps.Keys(t.props)) {
		a = append(a, "--override", k+"="+t.props[k])
	}
	return a
}

// tlsCase is the produce case of the tls section (the fill case's
// configuration), and tlsCaseName labels a run of it.
var tlsCase = fillCase

func tlsCaseName(what string) string {
	return strings.TrimSpace(what) + " over SSL (no client certificate)"
}
