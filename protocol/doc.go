// Package protocol frames Kafka requests and responses on a connection.
//
// Every message on the wire is a 4-byte big-endian size followed by that many
// bytes. A request starts with its header:
//
//	int16  api_key
//	int16  api_version
//	int32  correlation_id
//	int16+ client_id        nullable (non-compact) string, in header v1 and v2
//	tags                    header v2 only (flexible versions, KIP-482)
//
// and a response with the correlation id, followed by a tag section when the
// response is flexible (response header v1). ApiVersions always answers with
// response header v0, whatever its version.
//
// Bodies are decoded and encoded with franz-go's kmsg. The one exception is
// the Fetch response, which AppendFetchResponse encodes around file regions so
// that record bytes can leave through sendfile(2) without entering user space.
//
// This package imports no other package of the project.
package protocol
