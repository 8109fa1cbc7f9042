// Package broker serves the Kafka protocol: listeners, one goroutine per
// connection serving one request at a time (so responses leave in request
// order, as in Kafka), dispatch by API key through one table that also
// drives ApiVersions, the handlers (one file per API, named by key), and the
// partitions this broker hosts.
//
// Cluster metadata (topics, ids, assignments, configs, partition state)
// lives in etcd through package controller; the broker keeps a cache of it
// that a watch refreshes, and opens a logstore.Log for every partition whose
// replica set names this broker.
package broker
