// Package kafkaref runs Apache Kafka as a reference for samsa: the broker for
// side-by-side benchmarks and compatibility checks, and Kafka's own tools
// (ProducerPerformance, ConsumerPerformance, TopicCommand, ConsoleProducer,
// ConnectStandalone, ...) against either broker.
//
// The jars come from Maven once: Libs copies the runtime dependencies that
// pom.xml (embedded in this package) names into <module root>/.cache/kafka-libs,
// git-ignored, and writes a stamp there holding the pom's SHA-256, so that a
// changed pom resolves again. Everything runs straight from that class path
// with the java on PATH: no Kafka distribution, no start scripts.
//
// Start runs one node in KRaft combined mode (broker and controller) on free
// loopback ports, with a fresh log dir formatted by kafka.tools.StorageTool.
package kafkaref

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed pom.xml
var pom []byte

//go:embed tiered-pom.xml
var tieredPom []byte

// log4j2XML sends everything at WARN and above to stderr.
const log4j2XML = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="STDERR" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="WARN"><AppenderRef ref="STDERR"/></Root>
  </Loggers>
</Configuration>
`

const (
	brokerJarGlob = "kafka_2.13-*.jar"
	tieredJarGlob = "kafka-storage-*-test.jar"
	stampName     = "resolved.sha256"
	log4j2Name    = "log4j2-stderr.xml"
)

// modulePath is the module whose root ModuleRoot looks for.
const modulePath = "github.com/samsa-io/samsa"

// ModuleRoot returns the directory of samsa's go.mod at or above the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return moduleRootFrom(dir)
}

func moduleRootFrom(dir string) (string, error) {
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("kafkaref: no go.mod of %s at or above the working directory", modulePath)
		}
		dir = parent
	}
}

// isModule reports whether gomod declares modulePath.
func isModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		fs := strings.Fields(line)
		if len(fs) >= 2 && fs[0] == "module" && strings.Trim(fs[1], `"`) == modulePath {
			return true
		}
	}
	return false
}

// pomStamp is what the stamp file holds once a directory holds the jars of
// pom.
func pomStamp(pom []byte) string {
	sum := sha256.Sum256(pom)
	return hex.EncodeToString(sum[:]) + "\n"
}

var libsMu sync.Mutex

// Libs resolves Apache Kafka's jars (the broker kafka_2.13, kafka-tools with
// ProducerPerformance, ConsumerPerformance and the CLI tools' main classes,
// connect-runtime for Connect standalone, a log4j2 binding) into
// <root>/.cache/kafka-libs with mvn, once, and returns that directory. root
// is the module root (ModuleRoot). Concurrent callers, in this process or
// others, wait for one resolution.
func Libs(ctx context.Context, root string) (string, error) {
	libs, err := ResolvePom(ctx, root, "kafka-libs", pom, brokerJarGlob)
	if err != nil {
		return "", err
	}
	return libs, writeLog4j2(libs)
}

// TieredLibs resolves the jar of Apache Kafka's LocalTieredStorage (the
// RemoteStorageManager of Kafka's own tests, in kafka-storage's test jar;
// tiered-pom.xml) into <root>/.cache/kafka-tiered-libs, once, as Libs does,
// and returns that directory, for Options.ClassPath. It is a directory of
// its own, so that the broker's jars in kafka-libs do not resolve again
// for it.
func TieredLibs(ctx context.Context, root string) (string, error) {
	return ResolvePom(ctx, root, "kafka-tiered-libs", tieredPom, tieredJarGlob)
}

// ResolvePom resolves the runtime dependencies of pom (a pom-packaged
// project, as internal/kafkaref's own) into <root>/.cache/<name> with mvn,
// once per content of pom, and returns that directory; a resolution that
// leaves no file matching mustGlob there is an error. Concurrent callers,
// in this process or others, wait for one resolution.
func ResolvePom(ctx context.Context, root, name string, pom []byte, mustGlob string) (string, error) {
	// Absolute, because mvn takes a relative -DoutputDirectory from the pom's
	// directory, not from ours.
	root, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	cache := filepath.Join(root, ".cache")
	libs := filepath.Join(cache, name)
	if resolved(libs, pom) {
		return libs, nil
	}
	libsMu.Lock()
	defer libsMu.Unlock()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(cache, name+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if resolved(libs, pom) {
		return libs, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("kafkaref: mvn not found (needed once to fetch Apache Kafka's jars): %w", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("kafkaref: java not found: %w", err)
	}
	tmp := libs + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	pomPath := filepath.Join(cache, name+".pom.xml")
	if err := os.WriteFile(pomPath, pom, 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", pomPath,
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kafkaref: mvn dependency:copy-dependencies: %w\n%s", err, Tail(out, 20))
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, mustGlob)); len(m) == 0 {
		return "", fmt.Errorf("kafkaref: mvn succeeded but %s holds no %s", tmp, mustGlob)
	}
	if err := os.WriteFile(filepath.Join(tmp, stampName), []byte(pomStamp(pom)), 0o644); err != nil {
		return "", err
	}
	if err := os.RemoveAll(libs); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, libs); err != nil {
		return "", err
	}
	return libs, nil
}

// resolved reports whether libs holds the jars of pom.
func resolved(libs string, pom []byte) bool {
	b, err := os.ReadFile(filepath.Join(libs, stampName))
	return err == nil && string(b) == pomStamp(pom)
}

// lockFile takes an exclusive flock on path, waiting for other processes.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kafkaref: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// writeLog4j2 puts the stderr log4j2 configuration Java refers to into libs,
// unless it is there already.
func writeLog4j2(libs string) error {
	p := filepath.Join(libs, log4j2Name)
	if b, err := os.ReadFile(p); err == nil && string(b) == log4j2XML {
		return nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", p, os.Getpid())
	if err := os.WriteFile(tmp, []byte(log4j2XML), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Version names the Kafka broker jar found in libs, e.g. "4.4.0"; "?" when
// there is none.
func Version(libs string) string {
	m, _ := filepath.Glob(filepath.Join(libs, brokerJarGlob))
	if len(m) == 0 {
		return "?"
	}
	return versionOf(filepath.Base(m[0]))
}

// versionOf extracts the version from a broker jar's file name.
func versionOf(jar string) string {
	v := strings.TrimSuffix(strings.TrimPrefix(jar, "kafka_2.13-"), ".jar")
	if v == "" || v == jar {
		return "?"
	}
	return v
}

// Java returns a command running `java <jvmOpts> -cp <libs>/* mainClass
// args...` with log4j2 configured to print WARN and above to stderr. The
// caller sets Stdin/Stdout/Stderr/Dir and starts it.
func Java(ctx context.Context, libs string, jvmOpts []string, mainClass string, args ...string) *exec.Cmd {
	_ = writeLog4j2(libs) // Libs wrote it; this covers a libs dir filled otherwise
	return exec.CommandContext(ctx, "java", javaArgs(libs, jvmOpts, mainClass, args)...)
}

func javaArgs(libs string, jvmOpts []string, mainClass string, args []string, more ...string) []string {
	cp := []string{filepath.Join(libs, "*")}
	for _, d := range more {
		cp = append(cp, filepath.Join(d, "*"))
	}
	a := make([]string, 0, len(jvmOpts)+4+len(args))
	a = append(a, jvmOpts...)
	a = append(a, "-Dlog4j2.configurationFile="+filepath.Join(libs, log4j2Name),
		"-cp", strings.Join(cp, string(os.PathListSeparator)), mainClass)
	return append(a, args...)
}

// Tail returns the last n lines of out, indented by four spaces.
func Tail(out []byte, n int) string {
	lines := strings.Split(string(bytes.TrimRight(out, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// ClusterID returns a random KRaft cluster id in the form kafka-storage
// random-uuid prints: 16 random bytes, URL-safe base64 without padding. Like
// Kafka's Uuid.randomUuid it never starts with '-', which a command line
// would take for an option (kafka-storage format -t -x... fails).
func ClusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id, nil
		}
	}
}

var errNoLibs = errors.New("kafkaref: libs holds no kafka_2.13 jar (call Libs)")
