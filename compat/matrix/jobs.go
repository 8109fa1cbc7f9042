package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var clientScenarios = []string{"create", "produce", "group", "admin", "errors"}

// txnScenarios are those of a client with a transactional producer.
var txnScenarios = append(clientScenarios[:len(clientScenarios):len(clientScenarios)], "txn")

// kip848Scenarios add group848 for the clients that speak KIP-848.
var kip848Scenarios = append(txnScenarios[:len(txnScenarios):len(txnScenarios)], "group848")

// secure adds the security scenarios (every client row has them).
func secure(s []string) []string { return append(slices.Clone(s), secScenarios...) }

// allJobs lists every client of the matrix, the slowest (JVMs) first.
func allJobs(root string) []job {
	java4 := filepath.Join(root, "compat", "java", "kafka4", "target", "lib")
	java3 := filepath.Join(root, "compat", "java", "kafka3", "target", "lib")
	py := requirements(filepath.Join(root, "compat", "python", "requirements.txt"))
	return []job{
		javaJob(root, "kafka4", []row{
			{"Java kafka-clients " + orUnknown(javaVersion(java4, "kafka-clients")), secure(kip848Scenarios)},
			{"Kafka Streams " + orUnknown(javaVersion(java4, "kafka-streams")), secure([]string{"pipeline", "pipeline1071"})},
		}),
		javaJob(root, "kafka3", []row{
			{"Java kafka-clients " + orUnknown(javaVersion(java3, "kafka-clients")), secure(txnScenarios)},
		}),
		cliJob(root),
		connectJob(root),
		pythonJob([]row{{"confluent-kafka " + orUnknown(py["confluent-kafka"]) + " (librdkafka)", withRegistry(secure(kip848Scenarios))}}),
		pythonJob([]row{{"kafka-python " + orUnknown(py["kafka-python"]), secure(txnScenarios)}}),
		nodeJob([]row{{"kafkajs " + orUnknown(npmVersion(filepath.Join(root, "compat", "node", "package.json"), "kafkajs")), withRegistry(secure(txnScenarios))}}),
		goJob("franz-go "+goModVersion(root, "github.com/twmb/franz-go"), franzScenarios),
		goJob("sarama "+goModVersion(root, "github.com/IBM/sarama"), saramaScenarios),
		goJob("kafka-go "+goModVersion(root, "github.com/segmentio/kafka-go"), kafkaGoScenarios),
	}
}

func orUnknown(v string) string {
	if v == "" {
		return "(not installed)"
	}
	return v
}

// A pinned requirement, extras included: name[extra,...]==version.
var reqLine = regexp.MustCompile(`^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)`)

// requirements reads the pinned versions of a requirements.txt.
func requirements(path string) map[string]string {
	out := map[string]string{}
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		if m := reqLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			out[strings.ToLower(m[1])] = m[2]
		}
	}
	return out
}

// npmVersion reads a dependency's version from package.json.
func npmVersion(path, name string) string {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	return strings.TrimLeft(pkg.Dependencies[name], "^~=")
}

// goModVersion reads a requirement's version from go.mod.
func goModVersion(root, module string) string {
	b, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	return "?"
}
