package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/testcerts"
)

// The security scenarios (doc.go, 8): one per secured listener.
const (
	secSASLSSL   = "sasl_ssl"   // SASL_SSL, SCRAM-SHA-512
	secMTLS      = "mtls"       // SSL with client certificates required
	secSASLPlain = "sasl_plain" // SASL_PLAINTEXT, PLAIN
)

var secScenarios = []string{secSASLSSL, secMTLS, secSASLPlain}

// secListeners names each scenario's listener, named by its protocol on
// both brokers.
var secListeners = map[string]string{secSASLSSL: "SASL_SSL", secMTLS: "SSL", secSASLPlain: "SASL_PLAINTEXT"}

// The principals of the security scenarios. Every client but the CLI row
// uses the matrix ones, whose ACLs the harness creates (kadm); the CLI row
// uses its own, created with kafka-configs.sh and granted with
// kafka-acls.sh by its scenarios. No principal has any ACL on deniedTopic.
const (
	deniedTopic = "matrix-denied"
	secPrefix   = "sec-" // the topics and groups the matrix principals may use

	scramUser, scramPassword = "matrixscram", "matrixscram-secret"
	plainUser, plainPassword = "matrixplain", "matrixplain-secret"
	certCN                   = "matrix-client"

	cliScramUser, cliScramPassword = "cliscram", "cliscram-secret"
	cliPlainUser, cliPlainPassword = "cliplain", "cliplain-secret"
	cliCertCN                      = "matrix-cli"

	storePassword = "matrix-store"

	brokerUser, brokerPassword = "broker", "broker-secret" // the brokers' own principal, a super user
)

// secTopic is the topic (and, with "-g", the group) of a job's security
// scenario.
func secTopic(prefix, scenario string) string { return secPrefix + prefix + "-" + scenario }

// security is a run's key material and secured listeners. The keys are
// made for the run (crypto/x509) and written to its temporary directory.
type security struct {
	dir       string
	ca        *testcerts.CA
	broker    *testcerts.Leaf
	client    *testcerts.Leaf // CN=matrix-client
	cli       *testcerts.Leaf // CN=matrix-cli
	listeners map[string]string
}

// newSecurity makes the CA and the broker's and clients' certificates.
func newSecurity(dir string) (s *security, err error) {
	defer testcerts.Recover(&err)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tb := testcerts.Panicking()
	ca := testcerts.NewCA(tb, "samsa matrix CA")
	return &security{
		dir:    dir,
		ca:     ca,
		broker: ca.Issue(tb, pkix.Name{CommonName: "localhost"}, nil),
		client: ca.Issue(tb, pkix.Name{CommonName: certCN}, nil),
		cli:    ca.Issue(tb, pkix.Name{CommonName: cliCertCN}, nil),
	}, nil
}

// brokerProps are the secured listeners' settings and the authorizer, the
// same for samsa and Kafka: PLAINTEXT (the other scenarios, and the
// harness) is User:ANONYMOUS, a super user; everyone else needs ACLs.
func (s *security) brokerProps() map[string]string {
	tb := testcerts.Panicking()
	return map[string]string{
		"ssl.keystore.type":                                     "PEM",
		"ssl.keystore.certificate.chain":                        s.broker.CertPEM(),
		"ssl.keystore.key":                                      s.broker.KeyPEM(tb),
		"ssl.truststore.type":                                   "PEM",
		"ssl.truststore.certificates":                           s.ca.CertPEM(),
		"listener.name.ssl.ssl.client.auth":                     "required",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":  "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": fmt.Sprintf(
			`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s" user_%s="%s" user_%s="%s" user_%s="%s";`,
			brokerUser, brokerPassword, brokerUser, brokerPassword, plainUser, plainPassword, cliPlainUser, cliPlainPassword),
		// The brokers reach each other through the SASL_PLAINTEXT
		// listener as User:broker (the usual production setup): the
		// replication of the internal topics, the transaction markers
		// and the share-group state cross it.
		"inter.broker.listener.name":           "SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"authorizer.class.name":                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                          "User:ANONYMOUS;User:" + brokerUser,
		"allow.everyone.if.no.acl.found":       "false",
	}
}

// secConfig is what the external client programs read (the file named by
// $SAMSA_MATRIX_SECURITY): per scenario, the listener and each client's
// own settings for it.
type secConfig struct {
	Denied    string                    `json:"denied"`
	Scenarios map[string]secClientConfs `json:"scenarios"`
}

type secClientConfs struct {
	Bootstrap   string            `json:"bootstrap"`
	Librdkafka  map[string]string `json:"librdkafka"`
	KafkaPython map[string]any    `json:"kafka_python"`
	Kafkajs     map[string]any    `json:"kafkajs"`
	Java        map[string]string `json:"java"`
}

// setup creates the SCRAM credential, the ACLs and the denied topic through
// the PLAINTEXT listener at admin, and writes the clients' settings; the
// listeners are the broker's secured ones (scenario listener name →
// address).
func (s *security) setup(ctx context.Context, admin string, listeners map[string]string) (err error) {
	defer testcerts.Recover(&err)
	s.listeners = listeners
	adm, done, err := franzAdminClient(&env{bootstrap: admin})
	if err != nil {
		return err
	}
	defer done()
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: scramUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: scramPassword},
	}); err != nil {
		return fmt.Errorf("SCRAM credential: %w", err)
	}
	principals := []string{"User:" + scramUser, "User:" + plainUser, "User:CN=" + certCN}
	for _, acls := range []*kadm.ACLBuilder{
		// Create, Delete and DescribeConfigs for Kafka Streams (its
		// topics and internal topics, the purge of its repartition
		// topics).
		kadm.NewACLs().Allow(principals...).ResourcePatternType(kadm.ACLPatternPrefixed).
			Topics(secPrefix).Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate, kadm.OpDelete, kadm.OpDescribeConfigs),
		// connect-sec-...: the group of a Connect sink named sec-...
		kadm.NewACLs().Allow(principals...).ResourcePatternType(kadm.ACLPatternPrefixed).
			Groups(secPrefix, "connect-"+secPrefix).Operations(kadm.OpRead),
	} {
		res, err := adm.CreateACLs(ctx, acls)
		if err != nil {
			return fmt.Errorf("create ACLs: %w", err)
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("create ACL %s %s %s %s: %w", r.Principal, r.Type, r.Name, r.Operation, r.Err)
			}
		}
	}
	if err := franzCreateTopic(ctx, adm, deniedTopic, 1, nil); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}

	tb := testcerts.Panicking()
	ca := testcerts.WriteFile(tb, s.dir, "ca.pem", []byte(s.ca.CertPEM()))
	cert := testcerts.WriteFile(tb, s.dir, "client.pem", []byte(s.client.CertPEM()))
	key := testcerts.WriteFile(tb, s.dir, "client.key", []byte(s.client.KeyPEM(tb)))
	trust := testcerts.WriteFile(tb, s.dir, "trust.p12", s.ca.TrustPKCS12(tb, storePassword))
	keystore := testcerts.WriteFile(tb, s.dir, "client.p12", s.client.PKCS12(tb, storePassword))
	conf := secConfig{Denied: deniedTopic, Scenarios: map[string]secClientConfs{
		secSASLSSL: {
			Bootstrap:   listeners[secSASLSSL],
			Librdkafka:  map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": scramUser, "sasl.password": scramPassword, "ssl.ca.location": ca},
			KafkaPython: map[string]any{"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": scramUser, "sasl_plain_password": scramPassword, "ssl_cafile": ca},
			Kafkajs:     map[string]any{"ssl": map[string]any{"ca": []string{s.ca.CertPEM()}}, "sasl": map[string]string{"mechanism": "scram-sha-512", "username": scramUser, "password": scramPassword}},
			Java:        javaSecurity(secSASLSSL, scramUser, scramPassword, trust, ""),
		},
		secMTLS: {
			Bootstrap:   listeners[secMTLS],
			Librdkafka:  map[string]string{"security.protocol": "SSL", "ssl.ca.location": ca, "ssl.certificate.location": cert, "ssl.key.location": key},
			KafkaPython: map[string]any{"security_protocol": "SSL", "ssl_cafile": ca, "ssl_certfile": cert, "ssl_keyfile": key},
			Kafkajs:     map[string]any{"ssl": map[string]any{"ca": []string{s.ca.CertPEM()}, "cert": s.client.CertPEM(), "key": s.client.KeyPEM(tb)}},
			Java:        javaSecurity(secMTLS, "", "", trust, keystore),
		},
		secSASLPlain: {
			Bootstrap:   listeners[secSASLPlain],
			Librdkafka:  map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": plainUser, "sasl.password": plainPassword},
			KafkaPython: map[string]any{"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": plainUser, "sasl_plain_password": plainPassword},
			Kafkajs:     map[string]any{"sasl": map[string]string{"mechanism": "plain", "username": plainUser, "password": plainPassword}},
			Java:        javaSecurity(secSASLPlain, plainUser, plainPassword, "", ""),
		},
	}}
	cliKeystore := testcerts.WriteFile(tb, s.dir, "cli.p12", s.cli.PKCS12(tb, storePassword))
	for scn, jp := range map[string]map[string]string{
		secSASLSSL:   javaSecurity(secSASLSSL, cliScramUser, cliScramPassword, trust, ""),
		secMTLS:      javaSecurity(secMTLS, "", "", trust, cliKeystore),
		secSASLPlain: javaSecurity(secSASLPlain, cliPlainUser, cliPlainPassword, "", ""),
	} {
		_ = testcerts.WriteFile(tb, s.dir, "java-cli-"+scn+".properties", []byte(props(jp)))
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	_ = testcerts.WriteFile(tb, s.dir, "security.json", b)
	// The Java programs have no JSON reader: one properties file each.
	for scn, c := range conf.Scenarios {
		jp := maps.Clone(c.Java)
		jp["bootstrap.servers"] = c.Bootstrap
		_ = testcerts.WriteFile(tb, s.dir, "java-"+scn+".properties", []byte(props(jp)))
	}
	return nil
}

// javaSecurity is the Java client's configuration for a scenario: SASL
// with the user given, the CA's trust store, the client's keystore.
func javaSecurity(scenario, user, password, trust, keystore string) map[string]string {
	p := map[string]string{"security.protocol": secListeners[scenario]}
	switch scenario {
	case secSASLSSL:
		p["sasl.mechanism"] = "SCRAM-SHA-512"
		p["sasl.jaas.config"] = fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password)
	case secSASLPlain:
		p["sasl.mechanism"] = "PLAIN"
		p["sasl.jaas.config"] = fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";`, user, password)
	}
	if trust != "" {
		p["ssl.truststore.type"], p["ssl.truststore.location"], p["ssl.truststore.password"] = "PKCS12", trust, storePassword
	}
	if keystore != "" {
		p["ssl.keystore.type"], p["ssl.keystore.location"], p["ssl.keystore.password"] = "PKCS12", keystore, storePassword
	}
	return p
}

// javaClient is the Java client's configuration for a scenario, with the
// matrix principals and the stores setup wrote (for Connect's worker).
func (s *security) javaClient(scenario string) map[string]string {
	user, password := secUser(scenario)
	trust, keystore := "", ""
	if scenario != secSASLPlain {
		trust = filepath.Join(s.dir, "trust.p12")
	}
	if scenario == secMTLS {
		keystore = filepath.Join(s.dir, "client.p12")
	}
	return javaSecurity(scenario, user, password, trust, keystore)
}

// goTLS is the TLS configuration of the Go clients for a scenario.
func (s *security) goTLS(scenario string) *tls.Config {
	if scenario == secSASLPlain {
		return nil
	}
	c := &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}
	if scenario == secMTLS {
		c.Certificates = []tls.Certificate{s.client.TLSCertificate()}
	}
	return c
}

// prepare creates the topics of a job's security scenarios (three
// partitions each), as the super user.
func (s *security) prepare(ctx context.Context, e *env, rows []row) error {
	var topics []string
	for _, r := range rows {
		for _, scn := range r.scenarios {
			if slices.Contains(secScenarios, scn) {
				topics = append(topics, secTopic(e.prefix, scn))
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	slices.Sort(topics) // a job's rows share its prefix, and so its topics
	topics = slices.Compact(topics)
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	for _, t := range topics {
		if err := franzCreateTopic(ctx, adm, t, 3, nil); err != nil {
			return err
		}
	}
	return nil
}

// authzError matches the authorization failures of every client in its own
// words: Kafka's code name, the Java exception, librdkafka's and sarama's
// messages.
var authzError = regexp.MustCompile(`(?i)TOPIC_AUTHORIZATION_FAILED|TopicAuthorization|Topic authorization failed|not authorized to access (this )?topic`)

// wantDenied checks that err, from producing to deniedTopic, is the
// client's authorization error.
func wantDenied(err error) error {
	if err == nil {
		return fmt.Errorf("producing to %s without an ACL succeeded", deniedTopic)
	}
	if !authzError.MatchString(err.Error()) {
		return fmt.Errorf("producing to %s without an ACL: %v, want a topic authorization error", deniedTopic, err)
	}
	return nil
}

// secEnvVar names the security settings' file for the external programs.
const secEnvVar = "SAMSA_MATRIX_SECURITY"

// withoutSecurity drops the security scenarios from every row (a broker the
// harness did not start has no listeners it knows of).
func withoutSecurity(jobs []job) []job { return withoutScenarios(jobs, secScenarios...) }

// secTimeout bounds a security scenario's reads.
const secTimeout = 60 * time.Second

// withBrokerProps is props with the security settings added (props alone
// when s is nil).
func (s *security) withBrokerProps(props map[string]string) map[string]string {
	out := maps.Clone(props)
	if s != nil {
		maps.Copy(out, s.brokerProps())
	}
	return out
}

// byScenario turns listener name → address into scenario → address.
func byScenario(listeners map[string]string) map[string]string {
	out := map[string]string{}
	for scn, name := range secListeners {
		out[scn] = listeners[name]
	}
	return out
}
