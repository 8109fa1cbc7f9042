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
// the Fetch response, which AppendFetchResponse encodes around regions so
// that record bytes can leave through sendfile(2) without entering user space.
// A Region is either a file range (a local log segment: sent with sendfile
// when the connection allows it, else pread and written) or bytes (records
// held in memory, such as a remote segment's chunk cache: written as any
// other bytes of the message). The two kinds mix freely in one response;
// whoever reads the log chooses the kind, and nothing else needs to know.
//
// This package imports no other package of the project.
package protocol
