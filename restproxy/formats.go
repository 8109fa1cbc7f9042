package restproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
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
		b, err := reencode(raw)
		if err != nil {
			return nil, errUnprocessable("%v", err)
		}
		return b, nil
	}
	return nil, errUnsupportedMedia
}

// reencode writes a JSON value as Jackson writes the tree Confluent's
// proxy parsed it into: compact, members in their order, strings in
// UTF-8 without \u escapes but for control characters, numbers as sent.
func reencode(raw json.RawMessage) ([]byte, error) {
	if compactAsIs(raw) {
		return append([]byte(nil), raw...), nil
	}
	return reencodeTokens(raw)
}

// compactAsIs reports whether raw is valid JSON that reencode would
// write unchanged: valid UTF-8, no whitespace outside strings, no escape
// in them, nested less than maxDepth. Most records are; re-encoding them
// token by token was most of a produce's CPU.
func compactAsIs(raw []byte) bool {
	in, depth := false, 0
	for _, c := range raw {
		switch {
		case in:
			if c == '\\' {
				return false
			}
			in = c != '"'
		case c == '"':
			in = true
		case c == '[' || c == '{':
			if depth++; depth >= maxDepth {
				return false
			}
		case c == ']' || c == '}':
			depth--
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return utf8.Valid(raw) && json.Valid(raw)
}

// reencodeTokens is reencode token by token.
func reencodeTokens(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := reencodeValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return out.Bytes(), nil
}

// maxDepth bounds the nesting reencode follows.
const maxDepth = 1000

func reencodeValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return errors.New("JSON nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		end := byte(']')
		if t == '{' {
			end = '}'
		}
		out.WriteByte(byte(t))
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			if t == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				writeString(out, key.(string))
				out.WriteByte(':')
			}
			if err := reencodeValue(dec, out, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		out.WriteByte(end)
	case string:
		writeString(out, t)
	case json.Number:
		out.WriteString(string(t))
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	}
	return nil
}

// writeString writes s quoted as Jackson does: '"', '\\' and control
// characters escaped, everything else as UTF-8.
func writeString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out.WriteByte('\\')
			out.WriteRune(r)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\r':
			out.WriteString(`\r`)
		case r == '\t':
			out.WriteString(`\t`)
		case r == '\b':
			out.WriteString(`\b`)
		case r == '\f':
			out.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(out, `\u%04X`, r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
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
