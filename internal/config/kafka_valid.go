package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigError is a config Kafka refuses, with Kafka's message ("Invalid
// value 0 for configuration background.threads: Value must be at least
// 1", "Unknown topic config name: x"); it is ErrInvalidConfig, or
// ErrUnknownConfig for a name Kafka does not know.
type ConfigError struct {
	Msg     string
	unknown bool
}

func (e *ConfigError) Error() string { return e.Msg }

// Is makes a ConfigError match ErrInvalidConfig or ErrUnknownConfig.
func (e *ConfigError) Is(target error) bool {
	return e.unknown && target == ErrUnknownConfig || !e.unknown && target == ErrInvalidConfig
}

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// invalidValue is a value Kafka's ConfigDef refuses (its ConfigException
// with a name and a value): the value as Kafka shows it and why. The
// checks return it without the config's name; named turns it into a
// ConfigError.
type invalidValue struct{ shown, why string }

func (e *invalidValue) Error() string { return e.why }

// named returns err, an invalidValue of config name, as the ConfigError
// with Kafka's message; any other error unchanged.
func named(name string, err error) error {
	var iv *invalidValue
	if errors.As(err, &iv) {
		return configErr("Invalid value %s for configuration %s: %s", iv.shown, name, iv.why)
	}
	return err
}

// Kafka's validators as they print themselves (KafkaDef.Valid).
var (
	validRange  = regexp.MustCompile(`^\[(-?[0-9.]+),\.\.\.(?:,(-?[0-9.]+))?\]$`)
	validOrNeg1 = regexp.MustCompile(`^\[(-?[0-9]+),\.\.\.,(-?[0-9]+)\] or -1$`)
	validSet    = regexp.MustCompile(`^(\(case insensitive\) )?\[([^\]]*)\]$`)
)

// throttledValid is how Kafka's ThrottledReplicaListValidator prints
// itself.
const throttledValid = "[partitionId]:[brokerId],[partitionId]:[brokerId],..."

// kafkaCheck returns the check of Kafka's validator valid (KafkaDef.Valid)
// for config name of type t, run on the canonical value; nil when Kafka
// has none that samsa reads. Its errors are invalidValues with Kafka's
// reason. A list of a broker property (brokerList) must not repeat an
// element either, as Kafka 4.4's KafkaConfig requires.
func kafkaCheck(name string, t kmsg.ConfigType, valid string, brokerList bool) func(string) error {
	if m := validOrNeg1.FindStringSubmatch(valid); m != nil {
		lo, _ := strconv.ParseInt(m[1], 10, 64)
		hi, _ := strconv.ParseInt(m[2], 10, 64)
		return func(v string) error {
			if n, _ := strconv.ParseInt(v, 10, 64); n != -1 && (n < lo || n > hi) {
				return &invalidValue{v, fmt.Sprintf("Value must be between %d and %d or equal to -1", lo, hi)}
			}
			return nil
		}
	}
	if m := validRange.FindStringSubmatch(valid); m != nil {
		return rangeCheck(m[1], m[2])
	}
	if valid == throttledValid {
		return func(v string) error { return throttled(name, v) }
	}
	if valid == "non-empty string" {
		return func(v string) error {
			if v == "" {
				return &invalidValue{v, "String may not be empty"}
			}
			return nil
		}
	}
	if m := validSet.FindStringSubmatch(valid); m != nil && (t == tString || t == tList) {
		return setCheck(name, t, strings.Split(m[2], ", "), m[1] != "", brokerList)
	}
	return nil
}

// rangeCheck is Kafka's Range: at least lo, and at most hi unless hi is
// "". Numbers compare as doubles, as Kafka's do; NaN passes.
func rangeCheck(lo, hi string) func(string) error {
	min, _ := strconv.ParseFloat(lo, 64)
	max, hasMax := math.Inf(1), hi != ""
	if hasMax {
		max, _ = strconv.ParseFloat(hi, 64)
	}
	return func(v string) error {
		f, err := parseJavaDouble(v)
		switch {
		case err != nil:
			return nil
		case f < min:
			return &invalidValue{v, "Value must be at least " + lo}
		case hasMax && f > max:
			return &invalidValue{v, "Value must be no more than " + hi}
		}
		return nil
	}
}

// setCheck is Kafka's ValidString.in (a STRING) or ValidList.in (each
// element of a LIST), case-sensitive unless fold.
func setCheck(name string, t kmsg.ConfigType, allowed []string, fold, brokerList bool) func(string) error {
	in := func(v string) bool {
		for _, a := range allowed {
			if v == a || fold && strings.EqualFold(v, a) {
				return true
			}
		}
		return false
	}
	why := "String must be one of: " + strings.Join(allowed, ", ")
	if fold {
		why = "String must be one of (case insensitive): " + strings.Join(allowed, ", ")
	}
	return func(v string) error {
		if t != tList {
			if !in(v) {
				return &invalidValue{v, why}
			}
			return nil
		}
		seen := map[string]bool{}
		for _, e := range splitList(v) {
			if !in(e) {
				return &invalidValue{e, why}
			}
			if seen[e] && brokerList {
				return configErr("Configuration '%s' values must not be duplicated.", name)
			}
			seen[e] = true
		}
		return nil
	}
}

// throttled is Kafka's ThrottledReplicaListValidator: "*" alone, or
// partition:broker pairs.
func throttled(name, v string) error {
	es := splitList(v)
	if len(es) == 1 && es[0] == "*" {
		return nil
	}
	for _, e := range es {
		p, b, ok := strings.Cut(e, ":")
		if !ok || !isInt(strings.TrimSpace(p)) || !isInt(strings.TrimSpace(b)) {
			return &invalidValue{"[" + strings.Join(es, ", ") + "]",
				name + " must be the literal '*' or a list of replicas in the following format: " + throttledValid}
		}
	}
	return nil
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// parseJavaDouble parses a DOUBLE as Java's Double.parseDouble does for
// the spellings a config uses: decimal numbers, NaN and Infinity.
func parseJavaDouble(v string) (float64, error) {
	switch v {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "+Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if errors.Is(err, strconv.ErrRange) {
		return f, nil // ±Infinity or ±0, as Java rounds them
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) { // Go's own spellings: nan, inf
		return 0, errors.New("not a number")
	}
	return f, nil
}

// both runs a, then b (either may be nil).
func both(a, b func(string) error) func(string) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v string) error {
		if err := a(v); err != nil {
			return err
		}
		return b(v)
	}
}
