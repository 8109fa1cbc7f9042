package broker

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"

	"github.com/samsa-io/samsa/registry"
	"github.com/samsa-io/samsa/security"
)

// The schema registry's security, as the Kafka listeners': with
// authentication.method=BASIC its requests' basic credentials are checked
// against the cluster's SASL users (the PLAIN users of every SASL
// listener's JAAS config, then the SCRAM-SHA-512 and SCRAM-SHA-256
// credentials in etcd), the principal being User:<name>; with an
// authorizer, the cluster's ACLs decide, a subject being checked as a
// topic, as Confluent's Topic ACL authorizer checks it:
//
//	subject <topic>-key, <topic>-value   the topic <topic> (in any context)
//	any other subject (record name       the topic of the subject's own
//	strategies, references)              name (a PREFIXED ACL covers a
//	                                     namespace)
//
//	SUBJECT_READ (versions, lookup, schema by id)  Topic READ
//	SUBJECT_WRITE (register, compatibility)        Topic WRITE
//	SUBJECT_DELETE                                 Topic DELETE
//	SUBJECT_COMPATIBILITY_READ (config, mode)      Topic DESCRIBE_CONFIGS
//	SUBJECT_COMPATIBILITY_WRITE                    Topic ALTER_CONFIGS
//	GLOBAL_COMPATIBILITY_READ (/config, /mode)     Cluster DESCRIBE_CONFIGS
//	GLOBAL_COMPATIBILITY_WRITE                     Cluster ALTER_CONFIGS
//
// Lists answer the subjects the principal may read. Without
// authentication every request is User:ANONYMOUS's.

// subjectTopic is the topic whose ACLs a subject is checked with (its
// context, ":.ctx:", left out).
func subjectTopic(subject string) string {
	_, subject = registry.SplitSubject(subject)
	for _, suffix := range []string{"-key", "-value"} {
		if t, ok := strings.CutSuffix(subject, suffix); ok && t != "" {
			return t
		}
	}
	return subject
}

// registryAuthorize is the registry's Config.Authorize: the cluster's
// ACLs, when an authorizer is configured.
func (b *Broker) registryAuthorize(principal, host string, op registry.Op, subject string) bool {
	if b.authz == nil {
		return true
	}
	if principal == "" {
		principal = security.Anonymous
	}
	if subject == "" {
		kop := security.OpDescribeConfigs
		if op == registry.OpWriteConfig {
			kop = security.OpAlterConfigs
		}
		return b.authz.Authorize(principal, host, kop, security.ResourceCluster, clusterName)
	}
	kop := map[registry.Op]security.Operation{
		registry.OpRead:        security.OpRead,
		registry.OpWrite:       security.OpWrite,
		registry.OpDelete:      security.OpDelete,
		registry.OpReadConfig:  security.OpDescribeConfigs,
		registry.OpWriteConfig: security.OpAlterConfigs,
	}[op]
	return b.authz.Authorize(principal, host, kop, security.ResourceTopic, subjectTopic(subject))
}

// registryAuth checks HTTP basic credentials against the cluster's SASL
// users. A SCRAM password checked once is remembered (a digest of it,
// for the credential it matched), so that a client's every request does
// not cost a PBKDF2.
type registryAuth struct {
	b *Broker

	mu      sync.Mutex
	checked map[string][sha256.Size]byte // guarded by mu; user, mechanism, stored key → digest of the password
}

// maxCheckedPasswords bounds registryAuth.checked; past it, it starts
// over.
const maxCheckedPasswords = 1024

func (a *registryAuth) authenticate(ctx context.Context, user, password string) (string, bool, error) {
	if user == "" || password == "" {
		return "", false, nil
	}
	principal := security.UserPrefix + user
	for _, sec := range a.b.lnSec {
		if sec == nil || sec.sasl == nil {
			continue
		}
		if ex, ok := sec.sasl.Start("PLAIN"); ok {
			if _, done, err := ex.Next(ctx, []byte("\x00"+user+"\x00"+password)); err == nil && done {
				return principal, true, nil
			}
		}
	}
	store := scramStore{a.b}
	for _, mech := range []string{security.ScramSHA512, security.ScramSHA256} {
		c, found, err := store.ScramCredential(ctx, user, mech)
		if err != nil {
			return "", false, err
		}
		if !found {
			continue
		}
		key := user + "\x00" + mech + "\x00" + string(c.StoredKey)
		digest := sha256.Sum256([]byte(string(c.Salt) + "\x00" + password))
		a.mu.Lock()
		known, ok := a.checked[key]
		a.mu.Unlock()
		if ok && known == digest {
			return principal, true, nil
		}
		match, err := security.ScramPasswordMatches(mech, c, password)
		if err != nil || !match {
			continue
		}
		a.mu.Lock()
		if a.checked == nil || len(a.checked) >= maxCheckedPasswords {
			a.checked = map[string][sha256.Size]byte{}
		}
		a.checked[key] = digest
		a.mu.Unlock()
		return principal, true, nil
	}
	return "", false, nil
}
