package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Key types of _schemas records, as Confluent names them.
const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyMode          = "MODE"
	keyNoop          = "NOOP"
	keyContext       = "CONTEXT"
	keyDeleteSubject = "DELETE_SUBJECT"
	keyClearSubject  = "CLEAR_SUBJECT"
)

// recordKey is every key type's JSON: keytype, subject (absent for the
// global config and mode), version (SCHEMA only), tenant and context
// (CONTEXT only), magic (1 for SCHEMA, 0 for the others), in that order.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Tenant  string  `json:"tenant,omitempty"`
	Context string  `json:"context,omitempty"`
	Magic   int     `json:"magic"`
}

// defaultTenant is the tenant of Confluent's CONTEXT records.
const defaultTenant = "default"

// contextValue is a CONTEXT record's value: Confluent's registry writes
// one when a context gets its first schema, and lists its contexts from
// them.
type contextValue struct {
	Tenant  string `json:"tenant,omitempty"`
	Context string `json:"context,omitempty"`
}

func contextTombstone(ctx string) Record {
	return Record{Key: marshal(recordKey{KeyType: keyContext, Tenant: defaultTenant, Context: ctx})}
}

func contextRecord(ctx string) Record {
	return Record{Key: marshal(recordKey{KeyType: keyContext, Tenant: defaultTenant, Context: ctx}),
		Value: marshal(contextValue{Tenant: defaultTenant, Context: ctx})}
}

// Reference is a schema reference: a name the schema uses, resolved to a
// version of another subject.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaValue is a SCHEMA record's value.
type schemaValue struct {
	Subject    string          `json:"subject"`
	Version    int             `json:"version"`
	ID         int             `json:"id"`
	MD5        string          `json:"md5,omitempty"` // the GUID's bytes in base64, when Confluent wrote them (guidOf)
	SchemaType string          `json:"schemaType,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Schema     string          `json:"schema"`
	Deleted    bool            `json:"deleted"`
}

// configValue is a CONFIG record's value (and the body of GET /config).
type configValue struct {
	Subject            string `json:"subject,omitempty"`
	Alias              string `json:"alias,omitempty"`
	Normalize          *bool  `json:"normalize,omitempty"`
	ValidateFields     *bool  `json:"validateFields,omitempty"`
	CompatibilityLevel string `json:"compatibilityLevel,omitempty"`
	// CompatibilityPolicy is STRICT, LENIENT or LOGICAL (Confluent 8.0.3
	// on); LENIENT loosens JSON Schema's checks (jsonCompatibleLenient).
	CompatibilityPolicy string          `json:"compatibilityPolicy,omitempty"`
	CompatibilityGroup  string          `json:"compatibilityGroup,omitempty"`
	DefaultMetadata     json.RawMessage `json:"defaultMetadata,omitempty"`
	OverrideMetadata    json.RawMessage `json:"overrideMetadata,omitempty"`
	DefaultRuleSet      json.RawMessage `json:"defaultRuleSet,omitempty"`
	OverrideRuleSet     json.RawMessage `json:"overrideRuleSet,omitempty"`
}

// modeValue is a MODE record's value.
type modeValue struct {
	Subject string `json:"subject,omitempty"`
	Mode    string `json:"mode"`
}

// subjectValue is a DELETE_SUBJECT or CLEAR_SUBJECT record's value.
type subjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version,omitempty"`
}

// Record is one _schemas record as the Log reads and writes it; a nil
// Value is a tombstone.
type Record struct {
	Offset     int64
	Key, Value []byte
}

func subjectPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// marshal encodes v as Jackson does: compact, no HTML escaping.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Every type marshalled here is a plain struct of strings,
		// numbers and raw JSON that was valid when it came in.
		panic(fmt.Sprintf("registry: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func schemaRecord(v schemaValue) Record {
	k := recordKey{KeyType: keySchema, Subject: &v.Subject, Version: v.Version, Magic: 1}
	return Record{Key: marshal(k), Value: marshal(v)}
}

func schemaTombstone(subject string, version int) Record {
	return Record{Key: marshal(recordKey{KeyType: keySchema, Subject: &subject, Version: version, Magic: 1})}
}

func configRecord(subject string, v *configValue) Record {
	r := Record{Key: marshal(recordKey{KeyType: keyConfig, Subject: subjectPtr(subject)})}
	if v != nil {
		r.Value = marshal(v)
	}
	return r
}

func modeRecord(subject, mode string) Record {
	r := Record{Key: marshal(recordKey{KeyType: keyMode, Subject: subjectPtr(subject)})}
	if mode != "" {
		r.Value = marshal(modeValue{Subject: subject, Mode: mode})
	}
	return r
}

func deleteSubjectRecord(subject string, upTo int) Record {
	return Record{Key: marshal(recordKey{KeyType: keyDeleteSubject, Subject: &subject}),
		Value: marshal(subjectValue{Subject: subject, Version: upTo})}
}

func noopRecord() Record {
	return Record{Key: marshal(recordKey{KeyType: keyNoop}), Value: nil}
}

var errBadRecord = errors.New("registry: unreadable _schemas record")

// parseKey decodes a record's key.
func parseKey(b []byte) (recordKey, error) {
	var k recordKey
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("%w: key: %v", errBadRecord, err)
	}
	return k, nil
}
