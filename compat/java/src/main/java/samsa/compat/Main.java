package samsa.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's side of the compatibility matrix (compat/matrix runs it).
 *
 * <p>Usage: {@code Main BOOTSTRAP PREFIX CLIENT:SCENARIO...}. Each scenario
 * runs in turn and prints one JSON line to stdout:
 * {@code {"client":"...","scenario":"...","ok":true,"error":"","ms":123}}.
 * Topics and groups are named {@code PREFIX-SCENARIO...}. The records, their
 * checks and the expected errors are those of compat/matrix/doc.go.
 */
public final class Main {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final long WAIT_MS = 60_000;

    final String bootstrap;
    final String prefix;
    final Properties security = new Properties(); // the secured listener's settings, for the security scenarios

    Main(String bootstrap, String prefix) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
    }

    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: Main BOOTSTRAP PREFIX CLIENT:SCENARIO...");
            System.exit(2);
        }
        Main m = new Main(args[0], args[1]);
        for (int i = 2; i < args.length; i++) {
            String[] cs = args[i].split(":", 2);
            String client = cs[0], scenario = cs.length > 1 ? cs[1] : "";
            long start = System.nanoTime();
            String err = "";
            try {
                m.run(client, scenario);
            } catch (Throwable t) {
                err = describe(t);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            System.out.println("{\"client\":" + json(client) + ",\"scenario\":" + json(scenario)
                    + ",\"ok\":" + err.isEmpty() + ",\"error\":" + json(err) + ",\"ms\":" + ms + "}");
            System.out.flush();
        }
        System.exit(0);
    }

    void run(String client, String scenario) throws Exception {
        if (client.startsWith("Kafka Streams") && List.of("sasl_ssl", "mtls", "sasl_plain").contains(scenario)) {
            streamsSecure(scenario);
            return;
        }
        switch (scenario) {
            case "create": create(); break;
            case "produce": produce(); break;
            case "group": group("group", Map.of()); break;
            case "group848": group("group848", Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer")); break;
            case "admin": admin(); break;
            case "errors": errors(); break;
            case "txn": txn(); break;
            case "sasl_ssl": case "mtls": case "sasl_plain": secure(scenario); break;
            case "wc-eos":
                // Runs until killed (TestStreamsExactlyOnce); kafka4 only.
                Class.forName("samsa.compat.WordCount").getMethod("runEOS", String.class, String.class, String.class)
                        .invoke(null, bootstrap, prefix, System.getProperty("samsa.state.dir"));
                break;
            case "pipeline":
                // Only the kafka4 build has Kafka Streams; look it up by name so
                // that the kafka3 build compiles without it.
                Class.forName("samsa.compat.WordCount").getMethod("run", String.class, String.class)
                        .invoke(null, bootstrap, prefix);
                break;
            case "pipeline1071":
                // The word count with group.protocol=streams (KIP-1071),
                // on topics of its own.
                Class.forName("samsa.compat.WordCount").getMethod("run", String.class, String.class, String.class)
                        .invoke(null, bootstrap, prefix + "-s", "streams");
                break;
            default: throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    // ---- the records every client sends (compat/matrix/doc.go) ----

    static byte[] key(int i) {
        return ("key-" + (i % 37)).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] value(int i) {
        byte[] b = new byte[16 + i % 64];
        for (int j = 0; j < b.length; j++) {
            b[j] = (byte) (i * 31 + j * 7);
        }
        return b;
    }

    static byte[] bin(int i) {
        return new byte[] {0, (byte) 0xff, (byte) i};
    }

    static ProducerRecord<byte[], byte[]> record(String topic, int i) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key(i), value(i));
        r.headers().add(new RecordHeader("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8)));
        r.headers().add(new RecordHeader("bin", bin(i)));
        return r;
    }

    /** The record's index, after checking its key, value and headers byte for byte. */
    static int check(ConsumerRecord<byte[], byte[]> r) {
        Header[] hs = r.headers().toArray();
        if (hs.length != 2 || !hs[0].key().equals("i") || !hs[1].key().equals("bin")) {
            throw new IllegalStateException(r.topic() + "-" + r.partition() + "@" + r.offset()
                    + ": headers " + Arrays.toString(hs) + ", want [i, bin]");
        }
        int i = Integer.parseInt(new String(hs[0].value(), StandardCharsets.UTF_8));
        if (!Arrays.equals(r.key(), key(i)) || !Arrays.equals(r.value(), value(i))
                || !Arrays.equals(hs[1].value(), bin(i))) {
            throw new IllegalStateException(r.topic() + "-" + r.partition() + "@" + r.offset()
                    + ": record " + i + " differs from what was sent");
        }
        return i;
    }

    // ---- clients ----

    Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.putAll(security);
        return p;
    }

    Admin admin0() {
        Properties p = common();
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(p);
    }

    KafkaProducer<byte[], byte[]> producer(String codec, Map<String, String> extra) {
        Properties p = common();
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    KafkaConsumer<byte[], byte[]> consumer(String group) {
        return consumer(group, Map.of());
    }

    KafkaConsumer<byte[], byte[]> consumer(String group, Map<String, String> extra) {
        Properties p = common();
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void createTopic(Admin a, String topic, int partitions, Map<String, String> configs) throws Exception {
        NewTopic t = new NewTopic(topic, partitions, (short) 1);
        if (configs != null) {
            t.configs(configs);
        }
        a.createTopics(Collections.singleton(t)).all().get();
        // The broker learns a new topic's leaders a moment after CreateTopics
        // answers; scenarios start once metadata shows them.
        waitFor("leaders of " + topic, () -> {
            TopicDescription d = a.describeTopics(Collections.singleton(topic)).allTopicNames().get().get(topic);
            return d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty()) ? d : null;
        });
    }

    static void produceAll(KafkaProducer<byte[], byte[]> p, String topic, int from, int to) throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
        for (int i = from; i < to; i++) {
            fs.add(p.send(record(topic, i)));
        }
        for (java.util.concurrent.Future<RecordMetadata> f : fs) {
            f.get();
        }
    }

    // ---- scenario 1: create a topic with 3 partitions ----

    void create() throws Exception {
        String topic = prefix + "-create";
        try (Admin a = admin0()) {
            createTopic(a, topic, 3, null);
            TopicDescription d = waitFor("topic " + topic + " described with 3 partitions", () -> {
                TopicDescription td = a.describeTopics(Collections.singleton(topic)).allTopicNames().get().get(topic);
                return td.partitions().size() == 3 && td.partitions().stream().allMatch(pi -> pi.leader() != null) ? td : null;
            });
            if (!a.listTopics().names().get().contains(topic)) {
                throw new IllegalStateException("listTopics lacks " + topic + " (described: " + d + ")");
            }
        }
    }

    // ---- scenario 2: 1000 keyed records with headers per codec, read back ----

    void produce() throws Exception {
        List<String> failed = new ArrayList<>();
        try (Admin a = admin0()) {
            for (String codec : CODECS) {
                String topic = prefix + "-produce-" + codec;
                try {
                    createTopic(a, topic, 3, null);
                    // One request in flight: on Apache Kafka 4.4.0 a new partition
                    // now and then refused the first batch while later ones in
                    // flight were appended; the broker takes any sequence from a
                    // producer it does not know yet, so the retried first batch
                    // met OUT_OF_ORDER_SEQUENCE until delivery.timeout.ms.
                    try (KafkaProducer<byte[], byte[]> p = producer(codec,
                            Map.of(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1"))) {
                        produceAll(p, topic, 0, 1000);
                    }
                    readBack(topic, 1000);
                } catch (Exception e) {
                    failed.add(codec + ": " + describe(e));
                }
            }
        }
        if (!failed.isEmpty()) {
            throw new IllegalStateException(String.join("; ", failed));
        }
    }

    void readBack(String topic, int n) throws Exception {
        try (KafkaConsumer<byte[], byte[]> c = consumer(null)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Set<Integer> seen = new HashSet<>();
            Map<Integer, Integer> last = new HashMap<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (seen.size() < n) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + seen.size() + " of " + n + " records in " + WAIT_MS + " ms");
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    int i = check(r);
                    Integer prev = last.put(r.partition(), i);
                    if (prev != null && prev >= i) {
                        throw new IllegalStateException("partition " + r.partition() + ": record " + i + " after " + prev);
                    }
                    if (!seen.add(i)) {
                        throw new IllegalStateException("record " + i + " read twice");
                    }
                }
            }
        }
    }

    // ---- scenario 3: a group of two reads everything and commits; a new member resumes ----

    // group848 runs it with KIP-848 consumer groups (group.protocol=consumer).
    void group(String scenario, Map<String, String> extra) throws Exception {
        String topic = prefix + "-" + scenario, group = prefix + "-" + scenario + "-g";
        try (Admin a = admin0()) {
            createTopic(a, topic, 3, null);
        }
        try (KafkaProducer<byte[], byte[]> p = producer("none", Map.of())) {
            produceAll(p, topic, 0, 300);
        }
        Set<Integer> seen = new HashSet<>();
        try (KafkaConsumer<byte[], byte[]> c1 = consumer(group, extra); KafkaConsumer<byte[], byte[]> c2 = consumer(group, extra)) {
            c1.subscribe(Collections.singleton(topic));
            c2.subscribe(Collections.singleton(topic));
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (true) {
                for (KafkaConsumer<byte[], byte[]> c : List.of(c1, c2)) {
                    ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<byte[], byte[]> r : rs) {
                        seen.add(check(r));
                    }
                    if (!rs.isEmpty()) {
                        c.commitSync();
                    }
                }
                Set<TopicPartition> as1 = c1.assignment(), as2 = c2.assignment();
                if (seen.size() == 300 && !as1.isEmpty() && !as2.isEmpty() && as1.size() + as2.size() == 3) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("two members: read " + seen.size() + " of 300 records, assignments "
                            + as1 + " and " + as2 + " after " + WAIT_MS + " ms");
                }
            }
            c1.commitSync();
            c2.commitSync();
        }
        try (KafkaProducer<byte[], byte[]> p = producer("none", Map.of())) {
            produceAll(p, topic, 300, 400);
        }
        try (KafkaConsumer<byte[], byte[]> c3 = consumer(group, extra)) {
            c3.subscribe(Collections.singleton(topic));
            Set<Integer> again = new HashSet<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (again.size() < 100) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("new member: read " + again.size() + " of the 100 new records");
                }
                for (ConsumerRecord<byte[], byte[]> r : c3.poll(Duration.ofMillis(200))) {
                    int i = check(r);
                    if (i < 300) {
                        throw new IllegalStateException("new member read committed record " + i + " again (partition "
                                + r.partition() + " offset " + r.offset() + ")");
                    }
                    again.add(i);
                }
            }
            c3.commitSync();
        }
    }

    // ---- scenario 4: list offsets, describe the group and configs, alter one, delete ----

    void admin() throws Exception {
        String topic = prefix + "-admin", group = prefix + "-admin-g";
        long base = (System.currentTimeMillis() / 1000) * 1000 - 3_600_000;
        try (Admin a = admin0()) {
            createTopic(a, topic, 3, null);
            try (KafkaProducer<byte[], byte[]> p = producer("none", Map.of())) {
                for (int i = 0; i < 30; i++) {
                    p.send(new ProducerRecord<>(topic, 0, base + i * 1000L, key(i), value(i))).get();
                }
            }
            TopicPartition tp0 = new TopicPartition(topic, 0);
            long earliest = offsetOf(a, tp0, OffsetSpec.earliest());
            long latest = offsetOf(a, tp0, OffsetSpec.latest());
            long byTime = offsetOf(a, tp0, OffsetSpec.forTimestamp(base + 10_500));
            long empty = offsetOf(a, new TopicPartition(topic, 1), OffsetSpec.latest());
            if (earliest != 0 || latest != 30 || byTime != 11 || empty != 0) {
                throw new IllegalStateException("list offsets: earliest " + earliest + " latest " + latest
                        + " by time " + byTime + " empty partition latest " + empty + ", want 0 30 11 0");
            }

            try (KafkaConsumer<byte[], byte[]> c = consumer(group)) {
                c.subscribe(Collections.singleton(topic));
                long deadline = System.currentTimeMillis() + WAIT_MS;
                int n = 0;
                while (n < 30) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("group member read " + n + " of 30 records");
                    }
                    n += c.poll(Duration.ofMillis(200)).count();
                }
                c.commitSync();
                ConsumerGroupDescription d = a.describeConsumerGroups(Collections.singleton(group))
                        .describedGroups().get(group).get();
                if (d.members().size() != 1 || d.members().iterator().next().assignment().topicPartitions().size() != 3) {
                    throw new IllegalStateException("describe group: " + d + ", want one member with 3 partitions");
                }
                Map<TopicPartition, OffsetAndMetadata> committed = a.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get();
                OffsetAndMetadata om = committed.get(tp0);
                if (om == null || om.offset() != 30) {
                    throw new IllegalStateException("group offsets: " + committed + ", want " + tp0 + " at 30");
                }
            }

            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config cfg = a.describeConfigs(Collections.singleton(res)).all().get().get(res);
            ConfigEntry cp = cfg.get("cleanup.policy"), rm = cfg.get("retention.ms");
            if (cp == null || !"delete".equals(cp.value()) || rm == null || !"604800000".equals(rm.value())) {
                throw new IllegalStateException("describe configs: cleanup.policy " + cp + ", retention.ms " + rm);
            }
            Map<ConfigResource, Collection<AlterConfigOp>> alter = Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)));
            a.incrementalAlterConfigs(alter).all().get();
            waitFor("retention.ms altered to 3600000", () -> {
                ConfigEntry e = a.describeConfigs(Collections.singleton(res)).all().get().get(res).get("retention.ms");
                return e != null && "3600000".equals(e.value())
                        && e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG ? e : null;
            });

            a.deleteTopics(Collections.singleton(topic)).all().get();
            waitFor("topic " + topic + " gone from listTopics", () ->
                    a.listTopics().names().get().contains(topic) ? null : Boolean.TRUE);
        }
    }

    static long offsetOf(Admin a, TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult.ListOffsetsResultInfo info = a.listOffsets(Map.of(tp, spec)).partitionResult(tp).get();
        return info.offset();
    }

    // ---- scenario 5: errors Kafka reports ----

    void errors() throws Exception {
        String missing = prefix + "-errors-missing", big = prefix + "-errors-big";
        try (KafkaProducer<byte[], byte[]> p = producer("none", Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, "3000"))) {
            Throwable got = sendError(p, new ProducerRecord<>(missing, key(0), value(0)));
            if (!(got instanceof TimeoutException || got instanceof UnknownTopicOrPartitionException)) {
                throw new IllegalStateException("produce to a missing topic: got " + describe(got)
                        + ", want a TimeoutException (not present in metadata) or UnknownTopicOrPartitionException");
            }
        }
        try (Admin a = admin0()) {
            if (a.listTopics().names().get().contains(missing)) {
                throw new IllegalStateException("a produce created " + missing + " with auto-creation off");
            }
            createTopic(a, big, 1, Map.of("max.message.bytes", "2048"));
        }
        try (KafkaProducer<byte[], byte[]> p = producer("none", Map.of())) {
            p.send(new ProducerRecord<>(big, key(1), new byte[100])).get();
            byte[] random = new byte[4096];
            new java.util.Random().nextBytes(random);
            Throwable got = sendError(p, new ProducerRecord<>(big, key(2), random));
            if (!(got instanceof RecordTooLargeException)) {
                throw new IllegalStateException("produce 4096 bytes to a topic with max.message.bytes=2048: got "
                        + describe(got) + ", want RecordTooLargeException");
            }
        }
    }

    // ---- scenario 7: transactions ----

    /**
     * A transactional producer commits 30 records (with the offset 30 of a
     * group, sendOffsetsToTransaction), aborts 30, commits 30 more; a
     * read_committed consumer reads the 60 committed ones and no aborted
     * one; the group's committed offset is 30; a second producer of the same
     * transactional id fences the first, whose next commit fails with
     * ProducerFencedException.
     */
    void txn() throws Exception {
        String topic = prefix + "-txn", group = prefix + "-txn-group", id = prefix + "-txn-id";
        try (Admin a = admin0()) {
            createTopic(a, topic, 3, null);
        }
        Map<String, String> tx = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        KafkaProducer<byte[], byte[]> p = producer("none", tx);
        try {
            p.initTransactions();
            p.beginTransaction();
            produceAll(p, topic, 0, 30);
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(30)),
                    new ConsumerGroupMetadata(group));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 30; i++) {
                p.send(new ProducerRecord<>(topic, i % 3, key(i), "aborted".getBytes(StandardCharsets.UTF_8)));
            }
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            produceAll(p, topic, 30, 60);
            p.commitTransaction();

            // A new producer of the id fences this one.
            try (KafkaProducer<byte[], byte[]> p2 = producer("none", tx)) {
                p2.initTransactions();
                p.beginTransaction();
                Throwable got = null;
                try {
                    p.send(new ProducerRecord<>(topic, 0, key(0), "zombie".getBytes(StandardCharsets.UTF_8))).get();
                    p.commitTransaction();
                } catch (Exception e) {
                    got = e;
                }
                boolean fenced = false;
                for (Throwable c = got; c != null; c = c.getCause()) {
                    fenced |= c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException;
                }
                if (!fenced) {
                    throw new IllegalStateException("the fenced producer's transaction: " + describe(got)
                            + ", want ProducerFencedException");
                }
            }
        } finally {
            p.close(Duration.ofSeconds(5));
        }

        Properties cp = common();
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Set<Integer> seen = new HashSet<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (seen.size() < 60) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read_committed: " + seen.size() + " of 60 committed records");
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    String v = new String(r.value(), StandardCharsets.UTF_8);
                    if (v.equals("aborted") || v.equals("zombie")) {
                        throw new IllegalStateException("read_committed read an aborted record at " + r.partition() + "@" + r.offset());
                    }
                    if (!seen.add(check(r))) {
                        throw new IllegalStateException("record " + check(r) + " read twice");
                    }
                }
            }
            // Nothing after them either: the end offsets at read_committed
            // are where the reader stands.
            Map<TopicPartition, Long> ends = c.endOffsets(tps);
            for (TopicPartition tp : tps) {
                if (c.position(tp) != ends.get(tp)) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                        throw new IllegalStateException("read_committed read " + r.partition() + "@" + r.offset() + " past the 60");
                    }
                }
            }
        }
        try (Admin a = admin0()) {
            OffsetAndMetadata om = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .get(new TopicPartition(topic, 0));
            if (om == null || om.offset() != 30) {
                throw new IllegalStateException("the group's offset committed in the transaction: " + om + ", want 30");
            }
        }
    }

    static Throwable sendError(KafkaProducer<byte[], byte[]> p, ProducerRecord<byte[], byte[]> r) {
        try {
            p.send(r).get();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            return e;
        }
    }

    // ---- scenario 8: the secured listeners ----

    /**
     * Over the scenario's listener, with the settings compat/matrix wrote
     * to $SAMSA_MATRIX_SECURITY/java-SCENARIO.properties (bootstrap.servers
     * among them): 30 records to the topic sec-PREFIX-SCENARIO, read back by
     * a group member; then a record to matrix-denied, on which the principal
     * has no ACL, fails with TopicAuthorizationException.
     */
    void secure(String scenario) throws Exception {
        Properties sec = securitySettings(scenario);
        Main m = new Main(sec.getProperty("bootstrap.servers"), prefix);
        m.security.putAll(sec);
        String topic = "sec-" + prefix + "-" + scenario;
        try (KafkaProducer<byte[], byte[]> p = m.producer("none", Map.of())) {
            produceAll(p, topic, 0, 30);
            try (KafkaConsumer<byte[], byte[]> c = m.consumer(topic + "-g")) {
                c.subscribe(Collections.singleton(topic));
                Set<Integer> seen = new HashSet<>();
                Map<Integer, Integer> last = new HashMap<>();
                long deadline = System.currentTimeMillis() + WAIT_MS;
                while (seen.size() < 30) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("the group member read " + seen.size() + " of 30 records in " + WAIT_MS + " ms");
                    }
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        int i = check(r);
                        Integer prev = last.put(r.partition(), i);
                        if ((prev != null && prev >= i) || !seen.add(i)) {
                            throw new IllegalStateException("partition " + r.partition() + ": record " + i + " after " + prev);
                        }
                    }
                }
                c.commitSync();
            }
            wantDenied(p);
        }
    }

    /** The settings of a scenario's listener, bootstrap.servers included. */
    static Properties securitySettings(String scenario) throws Exception {
        String dir = System.getenv("SAMSA_MATRIX_SECURITY");
        if (dir == null) {
            throw new IllegalStateException("SAMSA_MATRIX_SECURITY is not set");
        }
        Properties sec = new Properties();
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(java.nio.file.Path.of(dir, "java-" + scenario + ".properties"))) {
            sec.load(in);
        }
        return sec;
    }

    /** A produce to matrix-denied, on which the principal has no ACL, fails with TopicAuthorizationException. */
    static void wantDenied(KafkaProducer<byte[], byte[]> p) {
        Throwable got = sendError(p, record("matrix-denied", 0));
        if (!(got instanceof TopicAuthorizationException)) {
            throw new IllegalStateException("produce to matrix-denied without an ACL: got " + describe(got)
                    + ", want TopicAuthorizationException");
        }
    }

    /**
     * The Streams row's security scenarios: the word count over the
     * scenario's listener, its topics, application id and internal topics
     * named sec-PREFIX-SCENARIO-wc..., then a produce to matrix-denied.
     */
    void streamsSecure(String scenario) throws Exception {
        Properties sec = securitySettings(scenario);
        Class.forName("samsa.compat.WordCount").getMethod("run", Properties.class, String.class)
                .invoke(null, sec, "sec-" + prefix + "-" + scenario);
        Main m = new Main(sec.getProperty("bootstrap.servers"), prefix);
        m.security.putAll(sec);
        try (KafkaProducer<byte[], byte[]> p = m.producer("none", Map.of())) {
            wantDenied(p);
        }
    }

    // ---- helpers ----

    interface Probe<T> {
        T get() throws Exception;
    }

    static <T> T waitFor(String what, Probe<T> probe) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        Exception last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                T v = probe.get();
                if (v != null) {
                    return v;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("timed out waiting for " + what + (last == null ? "" : ": " + describe(last)));
    }

    static String describe(Throwable t) {
        if (t == null) {
            return "no error";
        }
        while ((t instanceof ExecutionException || t instanceof java.lang.reflect.InvocationTargetException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String s = t.getClass().getSimpleName() + ": " + t.getMessage();
        return s.length() > 400 ? s.substring(0, 400) : s;
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
