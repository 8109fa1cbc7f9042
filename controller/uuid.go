package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// NewUUID returns a random (version 4) UUID the way Kafka's Uuid.randomUuid
// does: never the zero UUID nor the metadata topic's id (…01), and never
// one whose base64 form starts with '-' (it would read as a command-line
// flag). Use it for topic ids.
func NewUUID() [16]byte {
	for {
		var u [16]byte
		_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24+)
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u == ([16]byte{}) || u == ([16]byte{15: 1}) {
			continue
		}
		if s := EncodeUUID(u); s[0] == '-' {
			continue
		}
		return u
	}
}

// EncodeUUID returns Kafka's string form of a UUID: 22 characters of
// unpadded URL-safe base64. Cluster ids and topic ids are stored this way.
func EncodeUUID(u [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// DecodeUUID parses the form written by EncodeUUID.
func DecodeUUID(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 22 {
		return u, fmt.Errorf("%w: uuid %q: want 22 base64url characters", ErrInvalid, s)
	}
	n, err := base64.RawURLEncoding.Decode(u[:], []byte(s))
	if err != nil || n != 16 {
		return u, fmt.Errorf("%w: uuid %q: %v", ErrInvalid, s, err)
	}
	return u, nil
}
