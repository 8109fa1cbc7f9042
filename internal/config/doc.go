// Package config holds samsa's broker properties and topic configs, named
// and defaulted as Apache Kafka 4.x names and defaults them.
//
// Broker properties are read by Load from, in increasing precedence:
//
//  1. a Java .properties file (server.properties): "#" and "!" comments,
//     key=value or key: value or key value, backslash continuation lines
//     and escapes, as java.util.Properties reads them;
//  2. the environment, the way the apache/kafka container image turns it
//     into server.properties: KAFKA_ADVERTISED_LISTENERS=v sets
//     advertised.listeners ("_" → ".", "__" → "_", "___" → "-",
//     lower-cased), ignoring the JVM and image variables (KAFKA_HEAP_OPTS,
//     KAFKA_OPTS, KAFKA_JMX_*, KAFKA_LOG4J_*, KAFKA_VERSION, ...);
//     CLUSTER_ID sets cluster.id; KAFKA_CFG_X (bitnami) is read as KAFKA_X;
//     listeners default to the advertised ones on 0.0.0.0, as in the image;
//  3. --override key=value.
//
// An unknown key or a value that does not parse is an error that names
// the key, the value and where it came from. samsa-specific properties:
// etcd.endpoints, etcd.prefix, samsa.fetch.sendfile. Defaults that differ
// from Kafka's: node.id=1 (Kafka has none), listeners=PLAINTEXT://127.0.0.1:9092
// (Kafka: PLAINTEXT://:9092), log.dir=<os.TempDir()>/samsa-logs.
// Properties of KRaft (process.roles, controller.quorum.*) are accepted and
// ignored; listeners named in controller.listener.names are not bound.
//
// Topic configs (TopicConfigDef, ValidateTopicConfigs, Props.TopicConfigs,
// Props.TopicSettings, Props.DescribeTopic) take their defaults from the
// broker properties through Kafka's synonyms (retention.ms ←
// log.retention.ms, log.retention.minutes, log.retention.hours; segment.ms
// ← log.roll.ms, log.roll.hours; max.message.bytes ← message.max.bytes;
// ...), and are described with the sources and synonyms Kafka reports.
package config
