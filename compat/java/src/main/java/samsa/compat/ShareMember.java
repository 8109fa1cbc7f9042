package samsa.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a share group (KIP-932, the Java 4.x KafkaShareConsumer),
 * driven by a Go test: {@code ShareMember BOOTSTRAP GROUP TOPIC NAME MODE
 * [KEY=VALUE...]}. It subscribes to TOPIC and prints
 * {@code R partition offset deliveryCount} for each record it gets. MODE
 * says what it does with them, acknowledging explicitly and committing
 * after each poll ({@code C n} for n partitions committed, {@code E ...}
 * for an error): {@code accept}, {@code release} or {@code reject}; or
 * {@code hold}: after the first records it neither acknowledges nor polls
 * again (it holds their locks until the test kills it). A line
 * {@code leave} on stdin (or its end) closes the consumer. Extra KEY=VALUE
 * pairs are consumer properties.
 */
public final class ShareMember {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, args[3]);
        p.put("share.acknowledgement.mode", "explicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        String mode = args[4];
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }
        AcknowledgeType ack = switch (mode) {
            case "accept" -> AcknowledgeType.ACCEPT;
            case "release" -> AcknowledgeType.RELEASE;
            case "reject" -> AcknowledgeType.REJECT;
            case "hold" -> null;
            default -> throw new IllegalArgumentException("mode " + mode);
        };
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
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(args[2]));
            System.out.println("S started");
            System.out.flush();
            while (!leave.get()) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    out.append("R ").append(r.partition()).append(' ').append(r.offset()).append(' ')
                        .append(r.deliveryCount().orElse((short) -1)).append('\n');
                    if (ack != null) {
                        c.acknowledge(r, ack);
                    }
                }
                System.out.print(out);
                System.out.flush();
                if (ack == null) {
                    System.out.println("H holding");
                    System.out.flush();
                    while (!leave.get()) {
                        Thread.sleep(100);
                    }
                    Runtime.getRuntime().halt(0); // no close: the locks stay until they expire
                }
                Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync();
                StringBuilder cs = new StringBuilder();
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : res.entrySet()) {
                    if (e.getValue().isPresent()) {
                        cs.append("E commit ").append(e.getKey()).append(": ").append(e.getValue().get()).append('\n');
                    }
                }
                cs.append("C ").append(res.size()).append('\n');
                System.out.print(cs);
                System.out.flush();
            }
        }
        System.out.println("S left");
        System.out.flush();
    }
}
