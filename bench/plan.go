package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The two load generators: ours (cmd/samsa-bench, franz-go) and Apache
// Kafka's (ProducerPerformance, ConsumerPerformance).
const (
	clientKgo  = "kgo"
	clientJava = "java"
)

var clients = []string{clientKgo, clientJava}

// prodCase is one produce configuration.
type prodCase struct {
	acks   string // "1" or "all"
	parts  int32
	linger string // "default" (the client's own) or "5ms"
}

func (c prodCase) String() string {
	return fmt.Sprintf("acks=%s p=%d %s", c.acks, c.parts, lingerLabel(c.linger))
}

func lingerLabel(l string) string {
	if l == "default" {
		return "default"
	}
	return "linger " + l
}

// runsOn reports whether the case is measured with client. The Java
// producer's linger.ms default is already 5 ms (Kafka 4.0, KIP-1030), so
// its "linger 5ms" cases would repeat its default ones.
func (c prodCase) runsOn(client string) bool {
	return client != clientJava || c.linger == "default"
}

// fillCase is the produce case whose topic the consume runs read; it is
// measured like the others, at plan.consumeBytes instead of plan.produceBytes.
var fillCase = prodCase{acks: "1", parts: 16, linger: "5ms"}

// latencyCase runs paced at half of Kafka's peak for the same client.
var latencyCase = prodCase{acks: "all", parts: 1, linger: "default"}

// The fanin case: one direct consumer of every partition of a topic of
// faninParts partitions, a producer (linger 0) writing faninSize-byte
// records at faninRate per second to one of them; latency is produce call to
// consumer, and the broker's CPU is given per second of the measured records.
const (
	faninParts = 1000
	faninRate  = 1000
	faninSize  = 100
)

// faninMinBytes are the consumer's fetch.min.bytes of the fanin runs: kgo's
// and Kafka's default, where a Fetch returns at the first append, and 16 KiB
// (500 ms max wait), where one parked Fetch sees about a hundred appends.
var faninMinBytes = []int32{1, 16 << 10}

// faninCaseName labels the fanin run with the given fetch.min.bytes.
func faninCaseName(minBytes int32) string {
	return fmt.Sprintf("p=%d, 1 written, %d B @ %d rec/s, fetch.min.bytes %d", faninParts, faninSize, faninRate, minBytes)
}

// sections are the parts of a round, in order; -sections picks some.
var sections = []string{"produce", "consume", "latency", "fanin", "txn", "tls"}

// The txn case: one transactional producer (franz-go, acks=all) writing
// transactions of txnBatch records of plan.size bytes to one partition,
// each committed before the next; then a read_committed consumer of them.
const txnBatch = 100

// plan is what one run of bench measures.
type plan struct {
	quick          bool
	rounds         int   // per broker, alternating
	size           int   // record value bytes
	produceBytes   int64 // per produce case with kgo
	javaBytes      int64 // per produce case with the Java producer, several times slower on these cores
	consumeBytes   int64 // the fill topic, read once by each client
	warmBytes      int64 // unmeasured, before the first case of a round
	latencySeconds float64
	faninSeconds   float64
	txnBytes       int64           // the txn case's volume
	sections       map[string]bool // which of sections run
	cases          []prodCase      // fillCase is among them
	limitBytes     int64           // sendfile file size for the machine limits
	limitSeconds   float64
}

func makePlan(quick bool, rounds int) plan {
	p := plan{
		quick:          quick,
		rounds:         3,
		size:           1024,
		produceBytes:   1 << 30,
		javaBytes:      256 << 20,
		consumeBytes:   5 << 30,
		warmBytes:      512 << 20,
		latencySeconds: 10,
		faninSeconds:   10,
		txnBytes:       256 << 20,
		sections:       map[string]bool{},
		limitBytes:     512 << 20,
		limitSeconds:   3,
	}
	for _, acks := range []string{"1", "all"} {
		for _, parts := range []int32{1, 16} {
			for _, linger := range []string{"default", "5ms"} {
				if c := (prodCase{acks, parts, linger}); c != fillCase {
					p.cases = append(p.cases, c)
				}
			}
		}
	}
	// The fill comes last: the other cases then write into a page cache
	// that the 5 GiB have not crowded yet.
	p.cases = append(p.cases, fillCase)
	if quick {
		p.rounds = 1
		p.produceBytes = 64 << 20
		p.javaBytes = 32 << 20
		p.consumeBytes = 256 << 20
		p.warmBytes = 64 << 20
		p.latencySeconds = 3
		p.faninSeconds = 4
		p.txnBytes = 32 << 20
		p.limitBytes = 128 << 20
		p.limitSeconds = 1
		p.cases = []prodCase{latencyCase, fillCase}
	}
	if rounds > 0 {
		p.rounds = rounds
	}
	for _, s := range sections {
		p.sections[s] = true
	}
	return p
}

// only restricts p to the comma-separated sections in list ("" keeps all).
// The consume section reads the fill case's topic and the latency case
// takes its rate from the produce section, so each needs produce.
func (p *plan) only(list string) error {
	if list == "" {
		return nil
	}
	want, err := pickSections(list, sections)
	if err != nil {
		return err
	}
	if (want["consume"] || want["latency"]) && !want["produce"] {
		return errors.New("-sections: consume and latency need produce")
	}
	p.sections = want
	return nil
}

// pickSections parses a -sections list of names from all.
func pickSections(list string, all []string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(all, s) {
			return nil, fmt.Errorf("-sections: %q is not one of %s", s, strings.Join(all, ","))
		}
		want[s] = true
	}
	return want, nil
}

// recordsFor is how many records of p.size make up bytes.
func (p plan) recordsFor(bytes int64) int64 {
	return max(1, bytes/int64(p.size))
}

// bytesOf is the produce volume of c with client.
func (p plan) bytesOf(c prodCase, client string) int64 {
	switch {
	case c == fillCase:
		return p.consumeBytes
	case client == clientJava:
		return p.javaBytes
	}
	return p.produceBytes
}

// timeoutFor bounds a run moving bytes: 2 MB/s is broken rather than slow.
func timeoutFor(bytes int64) time.Duration {
	return time.Minute + time.Duration(bytes/2e6)*time.Second
}

// brokerOrder is the order of the broker rounds: Kafka first, so that its
// first round fixes the latency case's rate, then alternating.
func brokerOrder(rounds int, withSamsa, withKafka bool) []string {
	var o []string
	for range rounds {
		if withKafka {
			o = append(o, "kafka")
		}
		if withSamsa {
			o = append(o, "samsa")
		}
	}
	return o
}
