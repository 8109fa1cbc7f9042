package restproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// The embedded formats of v2.
const (
	formatBinary     = "binary"
	formatJSON       = "json"
	formatAvro       = "avro"
	formatProtobuf   = "protobuf"
	formatJSONSchema = "jsonschema"
)

func knownFormat(f string) bool {
	switch f {
	case formatBinary, formatJSON, formatAvro, formatProtobuf, formatJSONSchema:
		return true
	}
	return false
}

// supportedFormat reports whether the proxy serves an embedded format
// (the schema formats need the schema registry's serializers, not yet
// here).
func supportedFormat(f string) bool { return f == formatBinary || f == formatJSON }

// isNull reports whether an embedded key or value is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// encodeData turns an embedded key or value into the record's bytes: a
// base64 string for binary, the JSON text (compacted) for json; null is
// a null key or value.
func encodeData(format string, raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return nil, nil
	}
	switch format {
	case formatBinary:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errUnprocessable("binary key or value must be a base64 string: %s", raw)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, errUnprocessable("binary key or value is not base64: %v", err)
		}
		return b, nil
	case formatJSON:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, errUnprocessable("%v", err)
		}
		return buf.Bytes(), nil
	}
	return nil, errUnsupportedMedia
}

// decodeData is a record's key or value embedded in format: base64 for
// binary, the JSON value for json (a record that is not JSON fails the
// read, as the JSON deserializer of Confluent's consumer does: 40801).
func decodeData(format string, b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	switch format {
	case formatBinary:
		return json.Marshal(b)
	case formatJSON:
		if !json.Valid(b) {
			return nil, errf(408, 40801, "Error deserializing key/value: the record is not JSON")
		}
		return json.RawMessage(b), nil
	}
	return nil, errNotAcceptable
}
