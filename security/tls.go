package security

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// TLSConfig is the ssl.* settings of one listener, as Kafka names them
// (listener.name.<listener>.ssl.* overriding ssl.*).
type TLSConfig struct {
	KeystoreType       string // ssl.keystore.type: JKS (default), PKCS12, PEM
	KeystoreLocation   string // ssl.keystore.location
	KeystorePassword   string // ssl.keystore.password
	KeyPassword        string // ssl.key.password
	KeystoreCertChain  string // ssl.keystore.certificate.chain (PEM, inline)
	KeystoreKey        string // ssl.keystore.key (PEM, inline)
	TruststoreType     string // ssl.truststore.type
	TruststoreLocation string // ssl.truststore.location
	TruststorePassword string // ssl.truststore.password
	TruststoreCerts    string // ssl.truststore.certificates (PEM, inline)

	ClientAuth       string   // ssl.client.auth: none, requested, required
	EnabledProtocols []string // ssl.enabled.protocols: TLSv1.2, TLSv1.3
	CipherSuites     []string // ssl.cipher.suites (IANA names); empty: Go's defaults
	PrincipalRules   string   // ssl.principal.mapping.rules
	// EndpointIdentification is ssl.endpoint.identification.algorithm:
	// "https" checks the server's host name when this listener's
	// settings dial another broker; "" checks the chain only.
	EndpointIdentification string
}

// TLSConfigFrom reads a listener's settings through get, which returns
// the listener's value of a property (its override, else the broker-wide
// value, else Kafka's default).
func TLSConfigFrom(get func(name string) string) TLSConfig {
	return TLSConfig{
		KeystoreType:           get("ssl.keystore.type"),
		KeystoreLocation:       get("ssl.keystore.location"),
		KeystorePassword:       get("ssl.keystore.password"),
		KeyPassword:            get("ssl.key.password"),
		KeystoreCertChain:      get("ssl.keystore.certificate.chain"),
		KeystoreKey:            get("ssl.keystore.key"),
		TruststoreType:         get("ssl.truststore.type"),
		TruststoreLocation:     get("ssl.truststore.location"),
		TruststorePassword:     get("ssl.truststore.password"),
		TruststoreCerts:        get("ssl.truststore.certificates"),
		ClientAuth:             get("ssl.client.auth"),
		EnabledProtocols:       splitList(get("ssl.enabled.protocols")),
		CipherSuites:           splitList(get("ssl.cipher.suites")),
		PrincipalRules:         get("ssl.principal.mapping.rules"),
		EndpointIdentification: get("ssl.endpoint.identification.algorithm"),
	}
}

// splitList splits a LIST value; its elements (protocol and cipher suite
// names) hold no spaces.
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// reloadCheck is how often a handshake looks at the key files' contents: a certificate replaced on disk is served within this much of the
// change, with no goroutine watching.
const reloadCheck = time.Second

// TLS serves one listener's TLS: the key material, reloaded when its files
// change, the client-certificate policy and the principal mapping.
type TLS struct {
	cfg   TLSConfig
	log   *slog.Logger
	rules []principalRule
	base  *tls.Config // versions, suites, client auth; cloned per handshake

	mu      sync.Mutex
	current *tls.Config // base with the loaded material; guarded by mu
	stamps  []fileStamp // the files it was loaded from; guarded by mu
	checked time.Time   // last look at stamps; guarded by mu
}

// fileStamp identifies a file's content: a file rewritten within the
// file system's timestamp granularity, with the same size, is still seen
// to change (key files are a few KB: reading them once a second is cheap).
type fileStamp struct {
	path string
	sum  [sha256.Size]byte
}

func stampOf(path string) fileStamp {
	st := fileStamp{path: path}
	if b, err := os.ReadFile(path); err == nil {
		st.sum = sha256.Sum256(b)
	}
	return st
}

// NewTLS loads the listener's key material and checks its settings.
func NewTLS(cfg TLSConfig, log *slog.Logger) (*TLS, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rules, err := parsePrincipalRules(cfg.PrincipalRules)
	if err != nil {
		return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
	}
	base := &tls.Config{}
	if base.MinVersion, base.MaxVersion, err = tlsVersions(cfg.EnabledProtocols); err != nil {
		return nil, err
	}
	if base.CipherSuites, err = cipherSuites(cfg.CipherSuites); err != nil {
		return nil, err
	}
	switch strings.ToLower(cfg.ClientAuth) {
	case "", "none":
		base.ClientAuth = tls.NoClientCert
	case "requested":
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		base.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth %q: must be none, requested or required", cfg.ClientAuth)
	}
	t := &TLS{cfg: cfg, log: log, rules: rules, base: base}
	cur, stamps, err := t.load()
	if err != nil {
		return nil, err
	}
	t.current, t.stamps, t.checked = cur, stamps, time.Now()
	return t, nil
}

// Settings are the settings t serves with.
func (t *TLS) Settings() TLSConfig {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cfg
}

// Reconfigure serves with cfg from the next handshake on (a dynamic
// listener config: new key material, another client-auth policy), once it
// loads; on an error the settings in use stay.
func (t *TLS) Reconfigure(cfg TLSConfig) error {
	n, err := NewTLS(cfg, t.log)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg, t.rules, t.base = n.cfg, n.rules, n.base
	t.current, t.stamps, t.checked = n.current, n.stamps, n.checked
	return nil
}

// load reads the key material into a config for one handshake.
func (t *TLS) load() (*tls.Config, []fileStamp, error) {
	var stamps []fileStamp
	for _, p := range []string{t.cfg.KeystoreLocation, t.cfg.TruststoreLocation} {
		if p != "" {
			stamps = append(stamps, stampOf(p))
		}
	}
	cert, err := loadKeyPair(t.cfg)
	if err != nil {
		return nil, nil, err
	}
	pool, err := loadTrustStore(t.cfg)
	if err != nil {
		return nil, nil, err
	}
	c := t.base.Clone()
	c.Certificates = []tls.Certificate{cert}
	c.ClientCAs, c.RootCAs = pool, pool
	return c, stamps, nil
}

// config returns the material to serve with, first reloading it when a
// file it came from changed (at most once per reloadCheck). A reload that
// fails keeps the material in use, with a warning.
func (t *TLS) config() *tls.Config {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.checked) < reloadCheck || len(t.stamps) == 0 {
		return t.current
	}
	t.checked = time.Now()
	changed := false
	for _, s := range t.stamps {
		if stampOf(s.path) != s {
			changed = true
		}
	}
	if !changed {
		return t.current
	}
	cur, stamps, err := t.load()
	if err != nil {
		t.log.Warn("TLS key material changed but does not load; serving the previous one", "err", err)
		// Try again on the next check, not on every handshake.
		for i := range t.stamps {
			t.stamps[i] = stampOf(t.stamps[i].path)
		}
		return t.current
	}
	t.log.Info("TLS key material reloaded", "files", len(stamps))
	t.current, t.stamps = cur, stamps
	return t.current
}

// ServerConfig is the tls.Config a listener serves with; each handshake
// takes the current key material.
func (t *TLS) ServerConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return t.config(), nil }}
}

// ClientConfig is the tls.Config with which this listener's settings
// dial another broker (inter-broker replication): the trust store checks
// the server, the keystore is the client certificate, and
// ssl.endpoint.identification.algorithm=https checks serverName.
func (t *TLS) ClientConfig(serverName string) *tls.Config {
	cur := t.config()
	c := &tls.Config{
		MinVersion:   cur.MinVersion,
		MaxVersion:   cur.MaxVersion,
		CipherSuites: cur.CipherSuites,
		Certificates: cur.Certificates,
		RootCAs:      cur.RootCAs,
		ServerName:   serverName,
	}
	t.mu.Lock()
	endpoint := t.cfg.EndpointIdentification
	t.mu.Unlock()
	if !strings.EqualFold(endpoint, "https") {
		// The chain is checked, the name is not, as Kafka does with
		// the algorithm empty.
		roots := cur.RootCAs
		c.InsecureSkipVerify = true
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return c
}

func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: no server certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// Principal is the principal of a TLS connection after its handshake:
// User:<the mapped subject of the client certificate>, or User:ANONYMOUS
// without one, as Kafka's DefaultKafkaPrincipalBuilder makes it. A
// subject no rule maps is an error: the connection is refused.
func (t *TLS) Principal(st tls.ConnectionState) (string, error) {
	if len(st.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	t.mu.Lock()
	rules := t.rules
	t.mu.Unlock()
	name, err := mapPrincipal(rules, subjectDN(st.PeerCertificates[0]))
	if err != nil {
		return "", err
	}
	return UserPrefix + name, nil
}

var tlsVersionNames = map[string]uint16{
	"TLSV1": tls.VersionTLS10, "TLSV1.1": tls.VersionTLS11, "TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13,
}

// tlsVersions maps ssl.enabled.protocols to Go's version range (Go takes
// a range, Java a set: the lowest to the highest named).
func tlsVersions(names []string) (lo, hi uint16, err error) {
	if len(names) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, n := range names {
		v, ok := tlsVersionNames[strings.ToUpper(n)]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: unknown protocol %q (TLSv1.2, TLSv1.3)", n)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi, nil
}

// cipherSuites maps ssl.cipher.suites (the IANA names Java and Go share)
// to Go's ids. TLS 1.3's suites are not configurable in Go and are
// accepted as named.
func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s.ID
	}
	var out []uint16
	for _, n := range names {
		switch n {
		case "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256":
			continue
		}
		id, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("ssl.cipher.suites: unknown or unsupported cipher suite %q", n)
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		return nil, nil // TLS 1.3 suites only: TLS 1.2 keeps Go's defaults
	}
	return out, nil
}
