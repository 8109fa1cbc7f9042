package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	// ErrMalformed is a request whose header or body cannot be parsed; Kafka
	// closes the connection (InvalidRequestException).
	ErrMalformed = errors.New("protocol: malformed request")
	// ErrUnknownKey is a request for an API key kmsg does not know.
	ErrUnknownKey = errors.New("protocol: unknown api key")
)

// Header is a parsed request header.
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	// Flexible reports whether the request (and so its response) uses the
	// flexible encoding of KIP-482 at this version.
	Flexible bool
}

// ParseHeader parses the request header at the start of frame and returns
// it with the remaining body bytes. The key must be known to kmsg, so that
// the header version can be determined; the version is not checked here.
func ParseHeader(frame []byte) (Header, []byte, error) {
	var h Header
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: header of %d bytes", ErrMalformed, len(frame))
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	r := kbin.Reader{Src: frame[8:]}
	h.ClientID = r.NullableString()
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("%w: %d", ErrUnknownKey, h.Key)
	}
	if h.Version >= 0 && h.Version <= req.MaxVersion() {
		req.SetVersion(h.Version)
		h.Flexible = req.IsFlexible()
	}
	if h.Flexible {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return h, nil, fmt.Errorf("%w: truncated header", ErrMalformed)
	}
	return h, r.Src, nil
}

// DecodeBody decodes the request body of h's key and version with kmsg. The
// caller has checked that the version is one it serves.
func DecodeBody(h Header, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownKey, h.Key)
	}
	if h.Version < 0 || h.Version > req.MaxVersion() {
		return nil, fmt.Errorf("%w: %s v%d unknown to the decoder", ErrMalformed, kmsg.NameForKey(h.Key), h.Version)
	}
	req.SetVersion(h.Version)
	// Metadata v0's topic array is not nullable: Kafka refuses any negative
	// length, where kmsg would read null ("all topics").
	if h.Key == int16(kmsg.Metadata) && h.Version == 0 && len(body) >= 4 && int32(binary.BigEndian.Uint32(body)) < 0 {
		return nil, fmt.Errorf("%w: Metadata v0 with a negative topic count", ErrMalformed)
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrMalformed, kmsg.NameForKey(h.Key), h.Version, err)
	}
	return req, nil
}

// ResponseHeaderFlexible reports whether the response to h carries the tag
// section of response header v1. ApiVersions never does (KIP-511).
func ResponseHeaderFlexible(h Header) bool {
	return h.Flexible && h.Key != int16(kmsg.ApiVersions)
}

// AppendResponseHeader appends the response header for h (without the size).
func AppendResponseHeader(dst []byte, h Header) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if ResponseHeaderFlexible(h) {
		dst = append(dst, 0) // no tagged fields
	}
	return dst
}

// AppendResponse appends a whole response frame: size, header and the body
// encoded by kmsg at h's version.
func AppendResponse(dst []byte, h Header, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = AppendResponseHeader(dst, h)
	resp.SetVersion(h.Version)
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// DecodeResponse decodes frame, the answer to req sent with correlation id
// corr (read without its size), into resp: a frame with another
// correlation id is an error.
func DecodeResponse(frame []byte, req kmsg.Request, corr int32, resp kmsg.Response) error {
	got, body, err := ParseResponseHeader(frame, req.Key(), req.GetVersion())
	if err != nil {
		return err
	}
	if got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

// ParseResponseHeader parses the response header at the start of frame (a
// response to a request of key at version, read without its size) and
// returns the correlation id and the body: response header v1, with its
// tag section, when the request was flexible (never for ApiVersions).
func ParseResponseHeader(frame []byte, key, version int16) (int32, []byte, error) {
	if len(frame) < 4 {
		return 0, nil, fmt.Errorf("%w: response header of %d bytes", ErrMalformed, len(frame))
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	h := Header{Key: key, Version: version}
	if req := kmsg.RequestForKey(key); req != nil && version >= 0 && version <= req.MaxVersion() {
		req.SetVersion(version)
		h.Flexible = req.IsFlexible()
	}
	if !ResponseHeaderFlexible(h) {
		return corr, frame[4:], nil
	}
	r := kbin.Reader{Src: frame[4:]}
	kmsg.SkipTags(&r)
	if !r.Ok() {
		return corr, nil, fmt.Errorf("%w: truncated response header tags", ErrMalformed)
	}
	return corr, r.Src, nil
}
