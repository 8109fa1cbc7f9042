// Command matrix is samsa's compatibility matrix: it starts a cluster of
// three brokers (samsa, or with -reference Apache Kafka 4.x from Maven
// through internal/kafkaref; each node a broker and a voter of the
// controller quorum) whose inter-broker listener is SASL_PLAINTEXT with
// PLAIN (User:broker, a super user), so that transactions, groups and the
// internal topics' replication cross a secured listener as in production,
// runs the same scenarios through every client below, and prints one table,
// client × scenario → pass/fail with the error of each failure. It exits 1
// when any cell fails; a client that cannot be installed or started fails
// every one of its cells.
//
//	go run ./compat/matrix [-reference] [-readme] [-clients re] [-samsa bin/samsa]
//	go run ./compat/matrix -bootstrap host:port [-clients re]   (a broker already running)
//	go run ./compat/matrix [-reference] -serve                  (only start the broker)
//	go run ./compat/matrix -fetch-kafka                         (resolve Kafka's jars; make java-deps)
//
// make compat runs it against samsa, make compat-reference against Kafka,
// and make test through TestMatrix. -readme rewrites the README's
// compatibility section (between the compat-matrix markers) from the table.
//
// # Clients
//
// franz-go, sarama and kafka-go run in this process (franz.go, sarama.go,
// kafkago.go). The Java clients (kafka-clients 4.x and 3.x, and a Kafka
// Streams word count) are compat/java, one JVM per client version running
// all of its scenarios. Kafka's tools (kafka-topics, kafka-console-producer,
// kafka-console-consumer, kafka-consumer-groups, kafka-configs,
// kafka-get-offsets) and Connect standalone run from Apache Kafka's jars
// (cli.go, connect.go). confluent-kafka (librdkafka) and kafka-python are
// compat/python/clients.py in the virtualenv .venv; kafkajs is
// compat/node/clients.js (its registry cell with Confluent's
// @confluentinc/schemaregistry). The external programs take the bootstrap address,
// a name prefix and client:scenario arguments, and print one JSON line per
// scenario: {"client":..,"scenario":..,"ok":..,"error":..,"ms":..}.
//
// # Scenarios
//
// Topics and groups are named <prefix>-<scenario>..., the prefix being the
// client's, so that every client runs against the same cluster at once.
// The brokers run with auto.create.topics.enable=false and
// group.initial.rebalance.delay.ms=0; the clients bootstrap from the first.
// The scenarios' topics have one replica, their partitions spread over the
// brokers, so a transaction's markers and a group's offsets go from broker
// to broker over the inter-broker listener.
//
//  1. create: a topic with 3 partitions (admin API or kafka-topics), then
//     described with 3 partitions.
//  2. produce: for every codec the client supports (none, gzip, snappy, lz4,
//     zstd), a topic of 3 partitions, 1000 records i=0..999 with acks=all,
//     key "key-<i mod 37>", value 16+(i mod 64) bytes b[j]=(31i+7j) mod 256,
//     headers i=<decimal i> and bin=[0x00 0xff i mod 256]; read back from the
//     beginning of each partition: every record once, byte-exact, and i
//     strictly increasing within each partition.
//  3. group: 300 records on 3 partitions; two members of one group read them
//     all, both holding partitions, and commit; then 100 more records, and a
//     new member of the same group reads those 100 and none of the first 300.
//     group848: the same with KIP-848 consumer groups (group.protocol=consumer,
//     franz-go's ServerSideBalancer), for the clients that have them.
//  4. admin: 30 records on partition 0 with timestamps base+1000i; list
//     offsets earliest 0, latest 30, by time base+10500 → 11; a member of a
//     group reads them and commits; describe the group (one member, three
//     partitions) and its offsets (30); describe the topic's configs
//     (cleanup.policy=delete, retention.ms=604800000), alter retention.ms to
//     3600000 and see it as a dynamic topic config; delete the topic.
//  5. errors: a produce to a missing topic (auto-creation off) fails the way
//     Kafka makes that client fail (a metadata timeout or
//     UNKNOWN_TOPIC_OR_PARTITION) and creates nothing; a 4096-byte record to
//     a topic with max.message.bytes=2048 fails with MESSAGE_TOO_LARGE.
//  6. pipeline: Kafka Streams word count (at_least_once, with its
//     repartition and changelog topics), and Connect standalone FileStream
//     source → topic → FileStream sink, line for line.
//     pipeline1071: the same word count with group.protocol=streams
//     (KIP-1071: the broker assigns its tasks and creates its internal
//     topics).
//  7. txn (clients with a transactional producer): a topic of 3
//     partitions; one transactional producer commits records 0..29 (record
//     i on partition i mod 3), aborts 30 records of value "aborted", commits
//     30..59; a read_committed reader from the beginning reads the 60
//     committed records, each once and in order, and no aborted one; then a
//     second producer of the same transactional id initializes and the
//     first one's next transaction fails with the client's fencing error
//     (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH). The Java clients also
//     commit a group's offset in the first transaction
//     (sendOffsetsToTransaction) and read it back.
//  8. sasl_ssl, mtls, sasl_plain (every client row): every broker also has a
//     SASL_SSL listener (SCRAM-SHA-512), an SSL one requiring client
//     certificates and a SASL_PLAINTEXT one (PLAIN, users in its JAAS
//     config), and StandardAuthorizer with allow.everyone.if.no.acl.found
//     false; PLAINTEXT is User:ANONYMOUS, the super user the other
//     scenarios and the harness use. The harness makes a CA and the
//     certificates for the run (crypto/x509, nothing committed), creates
//     the SCRAM credential, PREFIXED ACLs for the matrix principals on
//     topics and groups named sec-..., and the topic matrix-denied on which
//     no principal has an ACL; each job's sec-<prefix>-<scenario> topic (3
//     partitions) is made before it runs. Over the scenario's listener the
//     client produces 30 records, a group member
//     (sec-<prefix>-<scenario>-g) reads them back byte-exact, and a
//     produce to matrix-denied fails with the client's own authorization
//     error (TopicAuthorizationException, TOPIC_AUTHORIZATION_FAILED,
//     TopicAuthorizationFailedError, sarama's and kafka-go's messages).
//     The CLI row uses principals of its own: kafka-configs.sh creates the
//     SCRAM user and sets a user and a client-id quota, the console
//     producer is refused, kafka-acls.sh grants the topic and group, then
//     the console producer and consumer move the records. The external
//     programs read their settings from $SAMSA_MATRIX_SECURITY. With
//     -bootstrap (a broker the harness did not start) these scenarios are
//     left out. Kafka Streams runs its word count over the listener (its
//     topics, application id and internal topics named
//     sec-<prefix>-<scenario>-wc...) and then produces to matrix-denied;
//     Connect standalone runs its FileStream pipeline with the worker's
//     clients (its own and its tasks' producer., consumer. and admin.
//     ones) configured for the listener, the topic and connectors named
//     sec-<prefix>-<scenario>-..., the sink's group connect-sec-..., and
//     a third connector's task, writing to matrix-denied, fails with the
//     producer's TopicAuthorizationException (the worker's REST API). The
//     matrix principals may also create, delete and describe the configs
//     of sec- topics and read connect-sec- groups for them.
//  9. registry (against samsa only: every broker serves the Schema
//     Registry, and the clients use node 2's, whose writes go to the
//     _schemas partition's leader): a client's Confluent-compatible
//     registry client and Avro serdes — confluent-kafka's
//     SchemaRegistryClient, AvroSerializer and AvroDeserializer,
//     @confluentinc/schemaregistry's with kafkajs moving the bytes,
//     franz-go's pkg/sr with hamba/avro. (Confluent's Java serializers are
//     not published to Maven Central, so the Java rows have no cell.) A
//     topic <prefix>-registry of one partition; the Avro record
//     samsa.matrix.User {name: string, n: int} registered under
//     <prefix>-registry-value and 10 records i=0..9 {name "user-<i>", n i}
//     produced through the serializer; version 2, adding email: string
//     with default "", registered and 10 records i=10..19 with email
//     "user-<i>@example.org"; a version 3 adding phone: string without a
//     default refused with HTTP 409; the subject's versions are [1, 2];
//     the 20 records read back in Confluent's wire format (magic byte 0,
//     the first 10 with version 1's id, the last 10 with version 2's) and
//     through the deserializer equal to what was sent.
package main
