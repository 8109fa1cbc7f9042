// Package registry is a Confluent-compatible Schema Registry served by
// every broker: Confluent's REST API (application/vnd.schemaregistry.v1+json)
// over state replayed from the compacted _schemas topic
// (kafkastore.topic), which it writes in Confluent's own record format so
// that a Confluent Schema Registry pointed at the same cluster reads
// samsa's schemas and ids, and samsa reads a _schemas topic Confluent's
// wrote.
//
// # Records
//
// Keys and values are JSON, field order as Confluent's Jackson writes
// them; a null value is a tombstone (a hard delete, or a config or mode
// removed):
//
//	{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
//	    {"subject":"s","version":1,"id":1,"schemaType":"AVRO",
//	     "references":[{"name":"n","subject":"t","version":1}],
//	     "metadata":{...},"ruleSet":{...},"schema":"...","deleted":false}
//	    (Confluent adds "md5":"<base64>" after "id" when it encrypts
//	    sensitive metadata: the schema's GUID, kept as read; see guid.go)
//	{"keytype":"CONFIG","subject":"s","magic":0}   (no subject: global)
//	    {"subject":"s","normalize":true,"compatibilityLevel":"FULL"}
//	{"keytype":"MODE","subject":"s","magic":0}     (no subject: global)
//	    {"subject":"s","mode":"IMPORT"}
//	{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
//	    {"subject":"s","version":3}   (versions up to 3 soft-deleted)
//	{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}
//	    {"subject":"s"}               (the subject's versions dropped)
//	{"keytype":"NOOP","magic":0}      (a new writer's marker; no state)
//
// # Readers and the writer
//
// Every broker runs a reader that tails partition 0 of the topic (through
// the Log the broker supplies, up to its high watermark) and applies each
// record to its State; every REST read is served from it. Writes are made
// by one broker at a time: the leader of partition 0, through the
// coordinator runtime (package coordinator). Its shard, once gained in a
// leader epoch, appends a NOOP record in that epoch and waits until its
// reader has applied it, so that its state holds every record written
// before; each write then appends in that epoch (a stale writer is fenced)
// and waits until its reader has applied it, so that ids and versions are
// assigned from complete state and a client reads its own write.
package registry
