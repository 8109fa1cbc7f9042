package link

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The keys of a link's config (controller.EntityLinks). Every key
// "source.X" is the Kafka client property X for the connection to the
// source cluster.
const (
	KeyBootstrap = "source.bootstrap.servers"
	KeyTopics    = "topics" // comma-separated regexes, each matching a whole topic name
	KeyGroups    = "groups" // comma-separated regexes of the groups whose offsets are copied
	KeyState     = "state"  // active (default) or paused
	KeyRefresh   = "metadata.refresh.interval.ms"
	KeySyncCfgs  = "sync.configs" // true: copy the source topics' configs at creation
	KeySyncACLs  = "sync.acls"    // true: keep the ACLs acl.filters selects as the source's (acls.go)
	// KeyACLFilters selects the ACLs a link with sync.acls copies, in the
	// JSON of Confluent's cluster links (ParseACLFilters).
	KeyACLFilters = "acl.filters"

	StateActive = "active"
	StatePaused = "paused"

	sourcePrefix = "source."
)

// sourceProps are the source client properties a link understands, with
// Kafka's names.
var sourceProps = []string{
	"bootstrap.servers", "client.id", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.endpoint.identification.algorithm",
}

// Sensitive reports whether a link config key holds a secret, which
// DescribeConfigs does not show.
func Sensitive(key string) bool {
	return key == "source.sasl.jaas.config" || key == "source.ssl.keystore.key"
}

// Spec is a link's config, parsed.
type Spec struct {
	Name      string
	Bootstrap []string
	Topics    []*regexp.Regexp
	Groups    []*regexp.Regexp
	Paused    bool
	SyncCfgs  bool
	SyncACLs  bool
	ACLs      []ACLFilter       // acl.filters, with sync.acls
	Refresh   time.Duration     // how often the source's topics and groups are looked at
	Source    map[string]string // the source.* properties, without the prefix
}

// ParseSpec parses and validates a link's config.
func ParseSpec(name string, cfg map[string]string) (*Spec, error) {
	s := &Spec{Name: name, Source: map[string]string{}, Refresh: 5 * time.Second}
	var errs []error
	for k, v := range cfg {
		if p, ok := strings.CutPrefix(k, sourcePrefix); ok {
			if !slices.Contains(sourceProps, p) {
				errs = append(errs, fmt.Errorf("source property %q is not supported", p))
			}
			s.Source[p] = v
			continue
		}
		var err error
		switch k {
		case KeyTopics:
			s.Topics, err = regexes(v)
		case KeyGroups:
			s.Groups, err = regexes(v)
		case KeyState:
			switch v {
			case StateActive, "":
			case StatePaused:
				s.Paused = true
			default:
				err = fmt.Errorf("state %q: expected active or paused", v)
			}
		case KeyRefresh:
			var ms int64
			if ms, err = strconv.ParseInt(v, 10, 64); err == nil && ms < 10 {
				err = fmt.Errorf("%s %d: at least 10", k, ms)
			}
			s.Refresh = time.Duration(ms) * time.Millisecond
		case KeySyncCfgs:
			s.SyncCfgs, err = strconv.ParseBool(v)
		case KeySyncACLs:
			s.SyncACLs, err = strconv.ParseBool(v)
		case KeyACLFilters:
			s.ACLs, err = ParseACLFilters(v)
		default:
			err = fmt.Errorf("unknown link config %q", k)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, b := range strings.Split(s.Source["bootstrap.servers"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			s.Bootstrap = append(s.Bootstrap, b)
		}
	}
	if s.SyncACLs && len(s.ACLs) == 0 {
		errs = append(errs, fmt.Errorf("%s needs %s: which of the source's ACLs to copy", KeySyncACLs, KeyACLFilters))
	}
	if len(s.Bootstrap) == 0 {
		errs = append(errs, fmt.Errorf("%s is required", KeyBootstrap))
	}
	if _, err := s.clientOpts(); err != nil {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// regexes parses comma-separated regexes, each anchored to a whole name.
func regexes(v string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + r + ")$")
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", r, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// MatchesTopic reports whether the link mirrors the source topic name.
func (s *Spec) MatchesTopic(name string) bool { return matchAny(s.Topics, name) }

// MatchesGroup reports whether the link copies the offsets of a group.
func (s *Spec) MatchesGroup(name string) bool { return matchAny(s.Groups, name) }

var jaasField = regexp.MustCompile(`(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// clientOpts are the kgo options that reach the source as its client
// properties say: security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT or
// SASL_SSL; SASL PLAIN and SCRAM with the username and password of
// sasl.jaas.config; PEM trust and key stores (files or inline).
func (s *Spec) clientOpts() ([]kgo.Opt, error) {
	p := s.Source
	opts := []kgo.Opt{kgo.SeedBrokers(s.Bootstrap...)}
	if id := p["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	} else {
		opts = append(opts, kgo.ClientID("samsa-link-"+s.Name))
	}
	proto := strings.ToUpper(p["security.protocol"])
	switch proto {
	case "", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("source security.protocol %q: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", proto)
	}
	if strings.HasSuffix(proto, "SSL") {
		tc, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if strings.HasPrefix(proto, "SASL") {
		var user, pass string
		for _, m := range jaasField.FindAllStringSubmatch(p["sasl.jaas.config"], -1) {
			v := strings.ReplaceAll(m[2], `\"`, `"`)
			if m[1] == "username" {
				user = v
			} else {
				pass = v
			}
		}
		if user == "" {
			return nil, errors.New("source sasl.jaas.config names no username")
		}
		switch mech := strings.ToUpper(p["sasl.mechanism"]); mech {
		case "", "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("source sasl.mechanism %q: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
		}
	}
	return opts, nil
}

// pemProp is a PEM property given inline (inline) or as a file (file).
func (s *Spec) pemProp(inline, file string) ([]byte, error) {
	if v := s.Source[inline]; v != "" {
		return []byte(v), nil
	}
	if f := s.Source[file]; f != "" {
		return os.ReadFile(f)
	}
	return nil, nil
}

func (s *Spec) tlsConfig() (*tls.Config, error) {
	p := s.Source
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := p[k]; t != "" && !strings.EqualFold(t, "PEM") {
			return nil, fmt.Errorf("source %s %q: only PEM stores are supported", k, t)
		}
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	ca, err := s.pemProp("ssl.truststore.certificates", "ssl.truststore.location")
	if err != nil {
		return nil, fmt.Errorf("source trust store: %w", err)
	}
	if ca != nil {
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, errors.New("source trust store: no PEM certificate")
		}
	}
	if v, set := p["ssl.endpoint.identification.algorithm"]; set && v == "" {
		// Kafka's clients check the chain and not the host name when the
		// property is set empty.
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("source presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	chain, err := s.pemProp("ssl.keystore.certificate.chain", "ssl.keystore.location")
	if err != nil {
		return nil, fmt.Errorf("source key store: %w", err)
	}
	if chain != nil {
		key := []byte(p["ssl.keystore.key"])
		if len(key) == 0 {
			key = chain // a PEM key store file holds the key and the chain
		}
		cert, err := tls.X509KeyPair(chain, key)
		if err != nil {
			return nil, fmt.Errorf("source key store: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// ParseFilter parses comma-separated regexes (each matching a whole
// name) into a matcher; an empty filter matches every name.
func ParseFilter(v string) (func(string) bool, error) {
	res, err := regexes(v)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return func(string) bool { return true }, nil
	}
	return func(s string) bool { return matchAny(res, s) }, nil
}
