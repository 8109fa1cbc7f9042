// Package compat proves compatibility: its tests drive in-process samsa
// brokers (internal/testutil) over real sockets with real Kafka clients —
// franz-go (kgo, kadm), sarama and segmentio/kafka-go.
package compat
