package samsa.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams word count (at_least_once): lines in PREFIX-wc-in, counts out
 * of PREFIX-wc-out, through the application's repartition and changelog
 * topics. Passes when the last count of every word is the true count and both
 * internal topics exist.
 */
public final class WordCount {
    static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"};

    public static void run(String bootstrap, String prefix) throws Exception {
        run(bootstrap, prefix, "classic");
    }

    /**
     * The word count with the given group.protocol: classic, or streams
     * (KIP-1071: the broker assigns the tasks and creates the internal
     * topics).
     */
    public static void run(String bootstrap, String prefix, String protocol) throws Exception {
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        run(common, prefix, protocol);
    }

    /**
     * The word count with the clients' settings common (bootstrap.servers,
     * and a secured listener's settings for the matrix's security scenarios).
     */
    public static void run(Properties common, String prefix) throws Exception {
        run(common, prefix, "classic");
    }

    static void run(Properties common, String prefix, String protocol) throws Exception {
        String in = prefix + "-wc-in", out = prefix + "-wc-out", app = prefix + "-wc";
        try (Admin a = Admin.create(common)) {
            a.createTopics(List.of(new NewTopic(in, 3, (short) 1), new NewTopic(out, 3, (short) 1))).all().get();
        }

        Map<String, Long> want = new HashMap<>();
        Properties pp = new Properties();
        pp.putAll(common);
        pp.put("acks", "all");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 200; i++) {
                StringBuilder line = new StringBuilder();
                for (int j = 0; j <= i % 5; j++) {
                    String w = WORDS[(i * 3 + j * 5) % WORDS.length];
                    want.merge(w, 1L, Long::sum);
                    line.append(j == 0 ? "" : " ").append(w);
                }
                p.send(new ProducerRecord<>(in, "line-" + i, line.toString()));
            }
            p.flush();
        }

        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(v -> Arrays.asList(v.split(" ")))
                .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));

        Path state = Files.createTempDirectory("samsa-wc");
        Properties sp = new Properties();
        sp.putAll(common);
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, "at_least_once");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        sp.put("statestore.cache.max.bytes", "0");
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        sp.put("consumer.auto.offset.reset", "earliest");
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);

        try (KafkaStreams streams = new KafkaStreams(b.build(), sp)) {
            streams.start();
            Properties cp = new Properties();
            cp.putAll(common);
            try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp, new StringDeserializer(), new LongDeserializer())) {
                List<TopicPartition> tps = List.of(new TopicPartition(out, 0), new TopicPartition(out, 1),
                        new TopicPartition(out, 2));
                c.assign(tps);
                c.seekToBeginning(tps);
                Map<String, Long> got = new HashMap<>();
                long deadline = System.currentTimeMillis() + 90_000;
                while (!got.equals(want)) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("word counts " + got + ", want " + want + " (streams state "
                                + streams.state() + ")");
                    }
                    for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                        got.put(r.key(), r.value());
                    }
                }
            }
            try (Admin a = Admin.create(common)) {
                Set<String> names = a.listTopics().names().get();
                for (String t : List.of(app + "-words-repartition", app + "-counts-changelog")) {
                    if (!names.contains(t)) {
                        throw new IllegalStateException("internal topic " + t + " missing; topics: " + names);
                    }
                }
            }
            streams.close(Duration.ofSeconds(20));
            streams.cleanUp();
        }
    }

    /**
     * The exactly_once_v2 word count of compat's TestStreamsExactlyOnce: the
     * application PREFIX-eos over PREFIX-eos-in (lines) and PREFIX-eos-out
     * (counts), topics the test creates and fills. Runs until the process is
     * killed, printing RUNNING once the instance runs. The system property
     * samsa.group.protocol (classic by default, or streams) is its
     * group.protocol.
     */
    public static void runEOS(String bootstrap, String prefix, String stateDir) throws Exception {
        String in = prefix + "-eos-in", out = prefix + "-eos-out", app = prefix + "-eos";
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(v -> Arrays.asList(v.split(" ")))
                .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties sp = new Properties();
        sp.put("bootstrap.servers", bootstrap);
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, "exactly_once_v2");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        sp.put("statestore.cache.max.bytes", "0");
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        sp.put("consumer.auto.offset.reset", "earliest");
        String protocol = System.getProperty("samsa.group.protocol", "classic");
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            // A killed instance leaves the group within seconds, not
            // Streams' default 45 s. (With the streams protocol these are
            // the broker's group.streams.* settings.)
            sp.put("consumer.session.timeout.ms", "6000");
            sp.put("consumer.heartbeat.interval.ms", "1000");
        }
        KafkaStreams streams = new KafkaStreams(b.build(), sp);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (now == KafkaStreams.State.ERROR) {
                System.out.println("ERROR");
                System.out.flush();
            }
        });
        streams.start();
        Thread.sleep(Long.MAX_VALUE);
    }

    private WordCount() {
    }

}
