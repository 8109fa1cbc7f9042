package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// The CLI row's security scenarios use principals of their own, set up
// with Kafka's tools through the PLAINTEXT listener (the super user):
// kafka-configs.sh creates cliscram's SCRAM credential (--entity-type
// users) and sets a client-id and a user quota (--entity-type clients,
// users); cliplain is in the broker's JAAS config and CN=matrix-cli is the
// subject of its certificate. The console producer is first refused with
// TopicAuthorizationException, then kafka-acls.sh grants the principal the
// topic and the group, and the console producer and a console consumer in
// the group move the records.

// cliPrincipal is the principal of the CLI row in a scenario.
func cliPrincipal(scenario string) string {
	switch scenario {
	case secSASLSSL:
		return "User:" + cliScramUser
	case secSASLPlain:
		return "User:" + cliPlainUser
	}
	return "User:CN=" + cliCertCN
}

// cliSecuritySetup is the scenario's kafka-configs.sh step: the SCRAM
// credential, or a quota that does not hold the producer back.
func cliSecuritySetup(ctx context.Context, e *env, scenario string) error {
	var alter, describe []string
	var want string
	switch scenario {
	case secSASLSSL:
		alter = []string{"--entity-type", "users", "--entity-name", cliScramUser,
			"--add-config", "SCRAM-SHA-512=[iterations=4096,password=" + cliScramPassword + "]"}
		describe = []string{"--entity-type", "users", "--entity-name", cliScramUser}
		want = "SCRAM-SHA-512=iterations=4096"
	case secMTLS:
		id := e.prefix + "-mtls"
		alter = []string{"--entity-type", "clients", "--entity-name", id, "--add-config", "producer_byte_rate=104857600"}
		describe = []string{"--entity-type", "clients", "--entity-name", id}
		want = "producer_byte_rate="
	case secSASLPlain:
		alter = []string{"--entity-type", "users", "--entity-name", cliPlainUser, "--add-config", "consumer_byte_rate=104857600"}
		describe = []string{"--entity-type", "users", "--entity-name", cliPlainUser}
		want = "consumer_byte_rate="
	}
	if _, err := e.tool(ctx, "", kafkaConfigs, append([]string{"--alter"}, alter...)...); err != nil {
		return err
	}
	return eventually(ctx, "kafka-configs --describe "+strings.Join(describe, " "), func(ctx context.Context) error {
		out, err := e.tool(ctx, "", kafkaConfigs, append([]string{"--describe"}, describe...)...)
		if err != nil {
			return err
		}
		if !strings.Contains(out, want) {
			return fmt.Errorf("%q lacks %q", lastLines(out, 3), want)
		}
		return nil
	})
}

func cliSecure(ctx context.Context, e *env, scenario string) error {
	if err := cliSecuritySetup(ctx, e, scenario); err != nil {
		return err
	}
	topic := secTopic(e.prefix, scenario)
	group := topic + "-g"
	addr := e.sec.listeners[scenario]
	conf := filepath.Join(e.sec.dir, "java-cli-"+scenario+".properties")
	var in strings.Builder
	for i := range secRecords {
		in.WriteString(cliLine(i) + "\n")
	}
	produce := func(ctx context.Context, input string, extra ...string) (string, error) {
		args := append([]string{"--topic", topic, "--command-config", conf, "--producer-property", "acks=all",
			"--producer-property", "client.id=" + e.prefix + "-mtls"}, producerProps...)
		out, err := e.toolAt(ctx, addr, input, kafkaConsoleProduce, append(args, extra...)...)
		if err == nil && strings.Contains(out, "ERROR") {
			err = fmt.Errorf("kafka-console-producer: %s", lastLines(out, 3))
		}
		return out, err
	}
	// No ACL yet: the principal may not write the topic. (Not idempotent:
	// an idempotent producer with no Write on any topic is refused
	// IdempotentWrite on the cluster first.) The refusal comes with the
	// first metadata answer; max.block.ms only bounds a broker that never
	// gives it, and covers a cold JVM's first SASL connection on a loaded
	// machine (5 s did not: "not present in metadata after 5000 ms").
	if out, err := produce(ctx, cliLine(0)+"\n", "--producer-property", "enable.idempotence=false",
		"--producer-property", "max.block.ms=30000"); err == nil || !authzError.MatchString(out+err.Error()) {
		return fmt.Errorf("kafka-console-producer before kafka-acls --add: %v, want TopicAuthorizationException", err)
	}
	// --producer: Write, Describe and Create on the topic; --consumer:
	// Read and Describe on it and Read on the group. kafka-acls prints the
	// topic's ACLs after adding them.
	p := cliPrincipal(scenario)
	out, err := e.tool(ctx, "", kafkaAcls, "--add", "--allow-principal", p, "--producer", "--consumer", "--topic", topic, "--group", group)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "principal="+p) || !strings.Contains(out, "operation=WRITE") || !strings.Contains(out, "operation=READ") {
		return fmt.Errorf("kafka-acls --add --producer --consumer --topic %s: %q lacks %s's WRITE and READ", topic, lastLines(out, 8), p)
	}
	// The broker applies a new ACL a moment after CreateAcls answers.
	if err := eventually(ctx, "kafka-console-producer with the ACL", func(ctx context.Context) error {
		_, err := produce(ctx, in.String())
		return err
	}); err != nil {
		return err
	}
	args := append([]string{"--topic", topic, "--group", group, "--command-config", conf, "--from-beginning",
		"--max-messages", fmt.Sprint(secRecords), "--timeout-ms", "30000"}, consumerProps...)
	out, err = e.toolAt(ctx, addr, "", kafkaConsoleConsume, args...)
	if err != nil {
		return err
	}
	recs, err := cliRecords(out)
	if err != nil {
		return err
	}
	c := newReadCheck(secRecords)
	for _, r := range recs {
		if err := c.add(int32(r[0]), int64(r[1]), recKey(r[2]), recValue(r[2]), recHeaders(r[2])); err != nil {
			return err
		}
	}
	if !c.done() {
		return fmt.Errorf("kafka-console-consumer in group %s printed %d of %d records", group, len(c.seen), secRecords)
	}
	return nil
}

// authzLine is the first line of out with an authorization error, or "".
func authzLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if authzError.MatchString(l) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
