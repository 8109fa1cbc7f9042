// DumpBrokerConfigs prints every broker property Apache Kafka defines, as
// JSON lines, for internal/config/kafkagen: kafka.server.KafkaConfig's
// ConfigDef (AbstractKafkaConfig.CONFIG_DEF, which merges the server,
// KRaft, socket, log, replication, group and share coordinator,
// transaction, quota, remote-log, metrics and security definitions) and
// DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS for the ones that change at run
// time. With the argument "topic" it prints the topic configs instead:
// LogConfig's ConfigDef, internal ones included. Run with the Kafka jars on
// the class path:
//
//	java -cp '.cache/kafka-libs/*' DumpBrokerConfigs.java [topic]
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.storage.internals.log.LogConfig;

public class DumpBrokerConfigs {
    public static void main(String[] args) {
        boolean topic = args.length > 0 && args[0].equals("topic");
        Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(topic
            ? LogConfig.configKeys()
            : kafka.server.KafkaConfig$.MODULE$.configDef().configKeys());
        StringBuilder out = new StringBuilder();
        out.append("{\"version\":").append(quote(AppInfoParser.getVersion())).append("}\n");
        for (ConfigDef.ConfigKey k : keys.values()) {
            String dflt;
            if (!k.hasDefault()) {
                dflt = "\"required\":true";
            } else if (k.defaultValue == null) {
                dflt = "\"default\":null";
            } else {
                dflt = "\"default\":" + quote(ConfigDef.convertToString(k.defaultValue, k.type));
            }
            out.append("{\"name\":").append(quote(k.name))
                .append(",\"type\":").append(quote(k.type.name()))
                .append(',').append(dflt)
                .append(",\"valid\":").append(quote(k.validator == null ? "" : k.validator.toString()))
                .append(",\"importance\":").append(quote(k.importance == null ? "" : k.importance.name()))
                .append(",\"dynamic\":").append(!topic && DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS.contains(k.name))
                .append(",\"internal\":").append(k.internalConfig)
                .append(",\"doc\":").append(quote(k.documentation == null ? "" : k.documentation))
                .append("}\n");
        }
        System.out.print(out);
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
