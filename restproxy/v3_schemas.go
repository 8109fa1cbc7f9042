package restproxy

// v3 produce with the schema formats: a key or value names its schema by
// schema_id, schema_version, its text (with "type") or nothing (the
// latest of its subject), the subject given or made by
// subject_name_strategy, as Confluent's SchemaManager resolves them.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"
)

// v3Schemas resolves the schemas of one v3 produce request's records;
// its registry client is made at the first need.
type v3Schemas struct {
	p     *Proxy
	r     *http.Request
	topic string
	cl    *sr.Client
}

// v3Resolved is a key's or value's schema with what the answer tells.
type v3Resolved struct {
	rs      *registeredSchema
	format  string
	subject string
	version int
}

func (s *v3Schemas) client() (*sr.Client, error) {
	if s.cl == nil {
		if s.p.cfg.RegistryURL == "" {
			return nil, errf(400, 400, "Schema Registry must be configured when using schemas.")
		}
		cl, err := s.p.registry(s.r)
		if err != nil {
			return nil, err
		}
		s.cl = cl
	}
	return s.cl, nil
}

// wantsSchema: d names a schema format or a schema, or gives no type
// while the registry is on (the latest schema of its subject).
func (s *v3Schemas) wantsSchema(d *v3Data) bool {
	if d.Type != nil {
		return schemaFormat(strings.ToLower(*d.Type))
	}
	return d.SchemaID != nil || d.SchemaVersion != nil || d.Schema != nil || d.Subject != nil || d.Strategy != nil || s.p.cfg.RegistryURL != ""
}

// errUnsupportedArgument is Confluent's answer to schema fields that do
// not go together.
var errUnsupportedArgument = errf(400, 400, "Unsupported argument: ")

// errSerializing is Confluent's answer when the registry fails a lookup;
// a refusal of the registry stays a refusal.
func errSerializing(err error, msg string) error {
	var re *restError
	if errors.As(registryErr(err), &re) && (re.status == 401 || re.status == 403) {
		return re
	}
	return errf(422, 42207, "Error serializing message. %s", msg)
}

// subject is the subject of d: given, or made by its strategy from the
// topic and, for the record name strategies, the schema (nil when
// there is none yet).
func (s *v3Schemas) subject(d *v3Data, isKey bool, rs *registeredSchema) (string, error) {
	if d.Subject != nil {
		return *d.Subject, nil
	}
	strategy := "TOPIC_NAME"
	if d.Strategy != nil {
		strategy = strings.ToUpper(*d.Strategy)
	}
	switch strategy {
	case "TOPIC_NAME":
		if isKey {
			return s.topic + "-key", nil
		}
		return s.topic + "-value", nil
	case "RECORD_NAME", "TOPIC_RECORD_NAME":
		if rs == nil {
			return "", errf(400, 400, "Cannot use schema_subject_strategy=%s without schema_id or schema.", strategy)
		}
		name := rs.recordName()
		if name == "" {
			return "", errf(400, 400, "The schema has no record name for subject_name_strategy %s", strategy)
		}
		if strategy == "TOPIC_RECORD_NAME" {
			return s.topic + "-" + name, nil
		}
		return name, nil
	}
	return "", errf(400, 400, "Unknown subject_name_strategy %s", strategy)
}

// recordName is the full name of the schema's record (Avro), first
// message (protobuf) or title (JSON Schema).
func (rs *registeredSchema) recordName() string {
	switch {
	case rs.avro != nil:
		if n, ok := rs.avro.(interface{ FullName() string }); ok {
			return n.FullName()
		}
	case rs.proto != nil:
		if rs.proto.Messages().Len() > 0 {
			return string(rs.proto.Messages().Get(0).FullName())
		}
	case rs.json != nil:
		return rs.json.Title
	}
	return ""
}

// resolve finds d's schema, in Confluent's order: schema_id, then
// schema_version, then the schema's text, then the subject's latest.
func (s *v3Schemas) resolve(d *v3Data, isKey bool) (*v3Resolved, error) {
	cl, err := s.client()
	if err != nil {
		return nil, err
	}
	ctx := s.r.Context()
	switch {
	case d.SchemaID != nil:
		if d.Type != nil || d.SchemaVersion != nil || d.Schema != nil {
			return nil, errUnsupportedArgument
		}
		return s.byID(ctx, cl, d, isKey, int(*d.SchemaID))
	case d.SchemaVersion != nil:
		if d.Type != nil || d.Schema != nil {
			return nil, errUnsupportedArgument
		}
		subject, err := s.subject(d, isKey, nil)
		if err != nil {
			return nil, err
		}
		ss, err := cl.SchemaByVersion(ctx, subject, int(*d.SchemaVersion))
		if err != nil {
			return nil, errf(400, 400, "Schema does not exist for subject: %s, version: %d", subject, *d.SchemaVersion)
		}
		return s.parsed(ctx, cl, ss)
	case d.Schema != nil:
		if d.Type == nil {
			return nil, errUnsupportedArgument
		}
		return s.byText(ctx, cl, d, isKey)
	}
	if d.Type != nil {
		return nil, errUnsupportedArgument
	}
	subject, err := s.subject(d, isKey, nil)
	if err != nil {
		return nil, err
	}
	ss, err := cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return nil, errSerializing(err, "Error when fetching latest schema version. subject = "+subject)
	}
	return s.parsed(ctx, cl, ss)
}

// parsed is the registry's subject schema, parsed.
func (s *v3Schemas) parsed(ctx context.Context, cl *sr.Client, ss sr.SubjectSchema) (*v3Resolved, error) {
	format := formatOfType(ss.Type)
	rs, err := s.p.schemaByID(ctx, cl, format, ss.ID)
	if err != nil {
		return nil, err
	}
	return &v3Resolved{rs: rs, format: format, subject: ss.Subject, version: ss.Version}, nil
}

// byID is the schema with id, under the subject d names, which must
// hold it.
func (s *v3Schemas) byID(ctx context.Context, cl *sr.Client, d *v3Data, isKey bool, id int) (*v3Resolved, error) {
	sch, err := cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, errSerializing(err, "Error when fetching schema by id. schemaId = "+strconv.Itoa(id))
	}
	format := formatOfType(sch.Type)
	rs, err := s.p.schemaByID(ctx, cl, format, id)
	if err != nil {
		return nil, err
	}
	subject, err := s.subject(d, isKey, rs)
	if err != nil {
		return nil, err
	}
	ss, err := cl.LookupSchema(ctx, subject, sch)
	if err != nil {
		return nil, errSerializing(err, "Error when fetching schema version. subject = "+subject+", schema = "+sch.Schema)
	}
	return &v3Resolved{rs: rs, format: format, subject: subject, version: ss.Version}, nil
}

// byText registers the schema's text under its subject (or finds it
// there).
func (s *v3Schemas) byText(ctx context.Context, cl *sr.Client, d *v3Data, isKey bool) (*v3Resolved, error) {
	format := strings.ToLower(*d.Type)
	if !schemaFormat(format) {
		return nil, errf(400, 400, "%s does not support schemas.", strings.ToUpper(format))
	}
	parsed, err := parseSchema(0, format, *d.Schema, nil)
	if err != nil {
		return nil, errf(400, 400, "Error parsing schema with format = %s", strings.ToUpper(format))
	}
	subject, err := s.subject(d, isKey, parsed)
	if err != nil {
		return nil, err
	}
	ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: *d.Schema, Type: schemaType(format)})
	if err != nil {
		return nil, errSerializing(err, "Error when registering schema. format = "+strings.ToUpper(format)+", subject = "+subject)
	}
	rs, err := s.p.schemaByID(ctx, cl, format, ss.ID)
	if err != nil {
		return nil, err
	}
	return &v3Resolved{rs: rs, format: format, subject: subject, version: ss.Version}, nil
}

// encode serializes d with its schema in Confluent's wire format.
func (s *v3Schemas) encode(d *v3Data, isKey bool) ([]byte, *v3DataAnswer, error) {
	res, err := s.resolve(d, isKey)
	if err != nil {
		return nil, nil, err
	}
	b, err := encodeSchemaData(res.rs, d.Data)
	if err != nil {
		var re *restError
		if errors.As(err, &re) && re.status == 422 {
			return nil, nil, errf(400, 400, "%s", re.msg)
		}
		return nil, nil, err
	}
	id, version := res.rs.id, res.version
	return b, &v3DataAnswer{Type: strings.ToUpper(res.format), Size: len(b), Subject: res.subject, SchemaID: &id, SchemaVersion: &version}, nil
}
