// Package compat proves compatibility: its tests drive in-process samsa
// brokers (internal/testutil) over real sockets with real Kafka clients —
// franz-go (kgo, kadm), sarama and segmentio/kafka-go.
//
// # File names
//
// A test file about one API is named after broker/'s file for it, number
// and name, then what it proves: 01_fetch_sessions_test.go tests Fetch
// (key 1, broker/01_fetch.go). An API family that broker/ serves from one
// file keeps that file's number for all its keys: 11_groups (the classic
// group APIs 8, 9, 11-16, 42, 47), 68_consumer_group (68, 69),
// 76_share_group (76, 77), 78_share_fetch (78, 79), 84_share_group_state,
// 88_streams_group, 90_share_group_offsets (90-92). Files about behaviour
// that crosses APIs get a subject instead: cluster_ (several brokers,
// faults, elections), security_ (listeners' TLS and SASL, authorization),
// conn_ (the connection layer), log_ (storage: restart, retention,
// compaction, log dirs), txn_ (transactions, keys 22 and 24-28, which
// broker/ spreads over several files), share_ (share groups through a
// whole client), client_<lib>_ (one client library's whole surface) and
// helpers_ (no tests). security_authz_kafka_reference asks every API key
// of Kafka 4.4 and samsa with an authorizer on; it is left out below.
//
// # Index: API key → test files (without _test.go)
//
//	00 Produce: 00_produce_*, cluster_leader_hints, cluster_divergence, txn_v2
//	01 Fetch: 01_fetch_*, client_franz_data, cluster_leader_hints, cluster_fetch_session, txn_log
//	02 ListOffsets: client_franz_data, cluster_elr, txn_log
//	03 Metadata: 03_metadata_*, client_franz_admin, cluster_two_brokers, security_authorized_operations
//	08 OffsetCommit: 11_groups_admin_offsets, 11_groups_commit_given_up, 11_groups_protocol_errors, log_compaction, security_authz_by_api
//	09 OffsetFetch: 11_groups_admin_offsets, security_authz_gaps
//	10 FindCoordinator: 10_find_coordinator_*, 03_metadata_internal_topics_kafka_reference, kafka_reference_odds, txn_requests
//	11 JoinGroup: 11_groups_protocol_errors, 11_groups_rebalance_timeout, 11_groups_balancers_static_members, 11_groups_sarama_kafkago
//	12 Heartbeat: 11_groups_protocol_errors, 11_groups_rebalance_timeout
//	13 LeaveGroup: 11_groups_protocol_errors
//	14 SyncGroup: 11_groups_protocol_errors, 11_groups_rebalance_timeout, 11_groups_balancers_static_members
//	15 DescribeGroups: 11_groups_admin_offsets, 11_groups_protocol_errors
//	16 ListGroups: 11_groups_admin_offsets, 68_consumer_group_migration, 88_streams_group_kafka_reference
//	17 SaslHandshake: security_sasl
//	18 ApiVersions: 18_api_versions_parity, conn_bad_input
//	19 CreateTopics: 19_create_topics_refusals, client_franz_admin, cluster_create_topics, log_jbod
//	20 DeleteTopics: 19_create_topics_refusals, client_franz_admin, cluster_delete
//	21 DeleteRecords: 19_create_topics_refusals, client_franz_data
//	22 InitProducerId: 00_produce_idempotent_sequences, 00_produce_franz, txn_requests
//	23 OffsetForLeaderEpoch: cluster_divergence, client_franz_admin
//	24 AddPartitionsToTxn: txn_requests, txn_v2
//	25 AddOffsetsToTxn: txn_franz, 10_find_coordinator_first_kafka_reference, 11_groups_commit_given_up
//	26 EndTxn: txn_requests, txn_v2, txn_franz, txn_java, txn_failover
//	27 WriteTxnMarkers: txn_log
//	28 TxnOffsetCommit: txn_v2, txn_franz, 11_groups_commit_given_up
//	29-31 DescribeAcls, CreateAcls, DeleteAcls: 29_acls_franz_and_tool
//	32 DescribeConfigs: 33_alter_configs_*, client_franz_admin
//	33 AlterConfigs: 33_alter_configs_group_configs
//	34 AlterReplicaLogDirs: security_authz_by_api only
//	35 DescribeLogDirs: 35_describe_log_dirs, 45_reassign
//	36 SaslAuthenticate: security_sasl, security_oauthbearer
//	37 CreatePartitions: 48_client_quotas (mutation quota), security_authz_by_api
//	38-41 Create, Renew, Expire, DescribeDelegationToken: 38_delegation_tokens
//	42 DeleteGroups: 11_groups_admin_offsets, kafka_reference_odds, 90_share_group_offsets_new_group
//	43 ElectLeaders: cluster_epochs, cluster_shutdown, cluster_faults
//	44 IncrementalAlterConfigs: 33_alter_configs_*, kafka_reference_odds, share_java
//	45-46 AlterPartitionReassignments, ListPartitionReassignments: 45_reassign
//	47 OffsetDelete: 11_groups_admin_offsets
//	48-49 DescribeClientQuotas, AlterClientQuotas: 48_client_quotas
//	50-51 Describe, AlterUserScramCredentials: security_sasl, 48_client_quotas
//	55 DescribeQuorum: 55_describe_quorum_tool
//	57 UpdateFeatures: 57_update_features
//	60 DescribeCluster: 60_describe_cluster_broker_rack, security_authorized_operations, client_franz_admin
//	61 DescribeProducers: txn_log, txn_connect
//	64 UnregisterBroker: 64_unregister_broker_tool, kafka_reference_odds
//	65 DescribeTransactions: txn_cli, txn_franz, txn_failover
//	66 ListTransactions: txn_cli, txn_franz
//	68-69 ConsumerGroupHeartbeat, ConsumerGroupDescribe: 68_consumer_group_*
//	71-72 GetTelemetrySubscriptions, PushTelemetry: 71_telemetry_*
//	74 ListConfigResources: 33_alter_configs_group_configs, 71_telemetry_*
//	75 DescribeTopicPartitions: 03_metadata_new_topic, cluster_elr, security_authz_gaps
//	76-77 ShareGroupHeartbeat, ShareGroupDescribe: share_java, share_librdkafka, share_failover, 78_share_fetch_*
//	78-79 ShareFetch, ShareAcknowledge: 78_share_fetch_*, share_java, share_librdkafka
//	84-85 ReadShareGroupState, WriteShareGroupState: 84_share_group_state_write_order
//	88-89, 93 StreamsGroupHeartbeat, Describe, TopologyDescriptionUpdate: 88_streams_group_*, txn_streams
//	90-92 Describe, Alter, DeleteShareGroupOffsets: 90_share_group_offsets_new_group, share_tools, security_authz_by_api
package compat
