package samsa.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a consumer group, driven by a Go test (compat's group
 * scenarios): {@code GroupMember BOOTSTRAP GROUP TOPIC NAME PROTOCOL [KEY=VALUE...]}
 * with PROTOCOL {@code classic} or {@code consumer} (KIP-848). It subscribes
 * to TOPIC, and after every poll prints {@code R partition offset} for each
 * record read, commits them synchronously and prints
 * {@code C partition next-offset} for each partition committed. A line
 * {@code leave} on stdin (or its end) closes the consumer, which leaves the
 * group; the test kills the process to crash it. Extra KEY=VALUE pairs are
 * consumer properties (group.instance.id, ...).
 */
public final class GroupMember {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, args[3]);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, args[4]);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "100");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (args[4].equals("classic")) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "3000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
        }
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }
        AtomicBoolean leave = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null && !line.equals("leave")) {
                    // only "leave" means anything
                }
            } catch (Exception e) {
                // stdin gone: leave
            }
            leave.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(args[2]));
            System.out.println("S started");
            System.out.flush();
            while (!leave.get()) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                StringBuilder out = new StringBuilder();
                Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    out.append("R ").append(r.partition()).append(' ').append(r.offset()).append('\n');
                    commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                System.out.print(out);
                System.out.flush();
                try {
                    c.commitSync(commit);
                    StringBuilder cs = new StringBuilder();
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : commit.entrySet()) {
                        cs.append("C ").append(e.getKey().partition()).append(' ').append(e.getValue().offset()).append('\n');
                    }
                    System.out.print(cs);
                } catch (Exception e) {
                    System.out.println("E commit: " + e);
                }
                System.out.flush();
            }
        }
        System.out.println("S left");
        System.out.flush();
    }
}
