package config

import (
	"sort"
	"strings"
)

// envInputs turns the environment into properties the way the apache/kafka
// container image does: every KAFKA_FOO_BAR=v becomes foo.bar=v (see
// envKey), except the variables that configure the JVM and the image
// itself. CLUSTER_ID (read by the image to format storage) becomes
// cluster.id, and bitnami's KAFKA_CFG_FOO_BAR is read as KAFKA_FOO_BAR.
// As the image does, when KAFKA_ADVERTISED_LISTENERS is set and
// KAFKA_LISTENERS is not, listeners are the advertised ones with every host
// replaced by 0.0.0.0. Variables are taken in sorted order. Of the JVM's
// options in KAFKA_OPTS, the -D system properties samsa acts on
// (systemProps) are read as properties of their own names.
func envInputs(environ []string) []input {
	var out []input
	env := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok {
			env[name] = value
		}
	}
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, name := range names {
		key, ok := envKey(name)
		if !ok {
			continue
		}
		seen[key] = true
		out = append(out, input{key: key, value: env[name], origin: "environment variable " + name})
	}
	for _, f := range strings.Fields(env["KAFKA_OPTS"]) {
		if k, v, ok := strings.Cut(strings.TrimPrefix(f, "-D"), "="); ok && strings.HasPrefix(f, "-D") && systemProps[k] {
			out = append(out, input{key: k, value: v, origin: "environment variable KAFKA_OPTS (-D" + k + ")"})
		}
	}
	if adv, ok := env["KAFKA_ADVERTISED_LISTENERS"]; ok && !seen["listeners"] && strings.TrimSpace(adv) != "" {
		out = append(out, input{key: "listeners", value: wildcardHosts(adv), origin: "derived from environment variable KAFKA_ADVERTISED_LISTENERS"})
	}
	return out
}

// systemProps are the Java system properties of Kafka's that samsa acts
// on, each a property of samsa's.
var systemProps = map[string]bool{"org.apache.kafka.sasl.oauthbearer.allowed.urls": true}

// imageEnv are KAFKA_ variables of the apache/kafka image (and of the
// launch scripts) that are not broker properties.
var imageEnv = map[string]bool{
	"KAFKA_VERSION": true, "KAFKA_HOME": true, "KAFKA_DEBUG": true,
	"KAFKA_HEAP_OPTS": true, "KAFKA_HEAP_OPT": true, "KAFKA_OPTS": true,
	"KAFKA_JVM_PERFORMANCE_OPTS": true, "KAFKA_GC_LOG_OPTS": true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true,
	"KAFKA_ENABLE_KRAFT":         true, "KAFKA_KRAFT_CLUSTER_ID": true, // bitnami
}

// envKey maps an environment variable name to a property name, or reports
// false when the variable is not a broker property.
//
// After the KAFKA_ prefix, as in the image's ConvertKey: "_" becomes ".",
// "__" becomes "_", "___" becomes "-", and the result is lower-cased.
func envKey(name string) (string, bool) {
	if name == "CLUSTER_ID" {
		return "cluster.id", true
	}
	if !strings.HasPrefix(name, "KAFKA_") || imageEnv[name] ||
		strings.HasPrefix(name, "KAFKA_JMX_") || strings.HasPrefix(name, "KAFKA_LOG4J_") ||
		strings.HasSuffix(name, "_OPTS") {
		return "", false
	}
	rest := strings.TrimPrefix(name, "KAFKA_")
	rest = strings.TrimPrefix(rest, "CFG_")
	if rest == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(rest); {
		if rest[i] != '_' {
			b.WriteByte(rest[i])
			i++
			continue
		}
		n := 0
		for i < len(rest) && rest[i] == '_' {
			n++
			i++
		}
		switch n {
		case 1:
			b.WriteByte('.')
		case 2:
			b.WriteByte('_')
		case 3:
			b.WriteByte('-')
		default:
			b.WriteString(strings.Repeat("_", n)) // undefined in the image; keep as is
		}
	}
	return strings.ToLower(b.String()), true
}

// wildcardHosts replaces the host of every NAME://host:port with 0.0.0.0.
func wildcardHosts(v string) string {
	es := splitList(v)
	for i, e := range es {
		scheme, rest, ok := strings.Cut(e, "://")
		if !ok {
			continue
		}
		if j := strings.LastIndex(rest, ":"); j >= 0 {
			es[i] = scheme + "://0.0.0.0" + rest[j:]
		}
	}
	return strings.Join(es, ",")
}
