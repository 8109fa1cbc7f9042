// Package restproxy serves Confluent REST Proxy's API from the broker, on
// its own HTTP listener (samsa.http.proxy.listener): v2 (topics,
// partitions, produce and consumer instances) and v3 (clusters, brokers,
// topics with configs and partitions, consumer groups with lag, ACLs,
// broker and cluster-wide broker configs, replicas, reassignments, and
// produce, one record, a stream or a batch).
//
// The proxy is a Kafka client of the cluster: every produce, fetch, commit
// and admin call goes through a franz-go client dialing the broker's own
// Kafka listener (Config.Bootstrap), as Confluent's proxy does through the
// Java clients. So a consumer instance is a real member of its consumer
// group, which other clients of the group see and share partitions with,
// and when the listener is a SASL one every call authenticates as the
// HTTP request's Basic user, with its password, and the cluster's ACLs
// decide as they do for that user on the Kafka port.
//
// # Wire format
//
// Requests and answers are JSON. v2 names the embedded format of records
// in the media type, application/vnd.kafka.FORMAT.v2+json: binary (keys
// and values are base64 strings), json (any JSON value, stored as the
// text Jackson writes of it), avro, jsonschema and protobuf (through the
// broker's schema registry, as the request's user: key_schema/value_schema
// are registered under TOPIC-key/TOPIC-value, key_schema_id/value_schema_id
// looked up; records carry Confluent's wire format, a zero byte, the
// schema id in 4 bytes big endian, then the Avro binary, the JSON, or the
// message indexes and the Protobuf binary; avro data in Avro's JSON
// encoding, protobuf data in protobuf's JSON mapping of the schema's first
// message).
// Every failure is answered with Confluent's body and status:
//
//	{"error_code":40401,"message":"Topic not found."}
//
// 404xx: unknown topic (40401), partition (40402), consumer instance
// (40403); 409xx: consumer state conflicts; 415/406: media types; 422xx:
// bad records; 5000x: Kafka errors (50002, 50003 when retriable).
//
// v3 is application/json: resources with kind, metadata (self,
// resource_name crn:///kafka=ID/...) and related links; collections as
// {"kind":"KafkaTopicList","metadata":{...},"data":[...]}. Its produce
// reads a stream of JSON objects and answers a stream, one object per
// record in order, each with its own error_code (200, or the failure's
// code as Confluent's maps it: 40401 for a topic or partition the
// cluster does not have, 40402 for a negative partition, 413 for a
// record too large, 40301 for a refusal), answers leaving while the
// request's later records arrive.
//
// # Cross-origin pages
//
// With access.control.allow.origin set, pages of the origins it lists
// may call the API from a browser: preflight requests are answered before
// authentication and routing, as Jetty's CrossOriginFilter answers them
// for Confluent's proxy (cors.go).
//
// # Consumer instances
//
// An instance (POST /consumers/{group}) lives on the broker that created
// it, until DELETE or until it is idle for consumer.instance.timeout.ms;
// base_uri in its creation answer names that broker as the request
// reached it. Records handed out by GET .../records and not yet taken are
// kept by the instance (a max_bytes answer leaves the rest for the next
// GET); commits without offsets commit what was handed out.
package restproxy
