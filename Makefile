# samsa — see README.md. Everything a fresh machine needs (besides Go, and
# later Java, Python and Node for the cross-language clients) is installed
# by these targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)

# make run: the broker's log.dirs (git-ignored); more flags with
# make run SERVEFLAGS='--override num.partitions=3'
DATA       ?= ./data
SERVEFLAGS ?=
# make bench BENCH_QUICK=1 (about three minutes); more flags with BENCHFLAGS='-rounds 5 -v'
BENCH_QUICK ?=
BENCHFLAGS  ?=
# the scale cases of make bench: make bench SCALEFLAGS='-sections partitions -partitions 10000'
SCALEFLAGS  ?=
# make fuzz FUZZTIME=5m
FUZZTIME   ?= 30s
# make test TESTFLAGS='-run TestFoo -v'
TESTFLAGS  ?=

# staticcheck 2026.2.2 (v0.8.2) supports Go 1.26.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/.tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck

# promtool (check metrics, for the /metrics test), built from the Prometheus
# module (v0.316.0 is Prometheus 3.x; builds with Go 1.26).
PROMTOOL_VERSION := v0.316.0
PROMTOOL := $(CURDIR)/.tools/promtool-$(PROMTOOL_VERSION)/promtool

# versitygw, an Apache-2 S3-compatible gateway, built from its Go module: the
# real object store that the tiered storage tests start (internal/s3test).
VERSITYGW_VERSION := v1.8.0
VERSITYGW := $(CURDIR)/.tools/versitygw-$(VERSITYGW_VERSION)/versitygw

# The race detector needs cgo and a C compiler; without one the tests still
# run, without -race, and say so.
RACE := $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v "$$($(GO) env CC)" >/dev/null 2>&1 && echo -race)

.PHONY: build run check test test-deps go-deps versitygw netns-deps docker-deps docker-test chaos chaos-kafka promtool chromium console-screenshot java-deps python-deps node-deps compat compat-reference lint fuzz bench clean

## build: bin/samsa
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/samsa ./cmd/samsa

## run: a single broker on 127.0.0.1:9092 with an embedded etcd, data in $(DATA);
## metrics and the console on http://127.0.0.1:9644, the schema registry on
## http://127.0.0.1:8081, the REST proxy on http://127.0.0.1:8082
run: build
	mkdir -p $(DATA)
	exec bin/samsa serve --override log.dirs=$(abspath $(DATA)) --override samsa.http.listener=127.0.0.1:9644 \
		--override samsa.schema.registry.listener=127.0.0.1:8081 --override samsa.http.proxy.listener=127.0.0.1:8082 $(SERVEFLAGS)

## check: lint, then every test that needs only Go and no cluster of brokers
## (unit and handler-level tests; no race detector; under three minutes, and
## cached between runs): the edit-test loop. make test runs everything.
# make check leaves out whole packages that need Java, Python, Node, Docker,
# network namespaces or a cluster of brokers (CHECK_SLOW_PKGS) and, in the
# packages it runs, the tests named in CHECK_SKIP. Every other package, a new
# one too, is in make check. It runs with -short, under which
# testutil.StartCluster and StartFaultCluster fail the test with a pointer
# here, so a cluster test cannot creep in unnoticed: add it to CHECK_SKIP,
# or, if it waits for nothing but its brokers' start (about a second), start
# it with testutil.StartClusterInCheck.
CHECK_SLOW_PKGS := compat compat/matrix internal/chaos internal/deploy internal/kafkaref
CHECK_SKIP := TestConsoleInBrowser|TestRESTProxyCORSInBrowser|TestConsoleLinksInBrowser|TestConsoleSchemasInBrowser|TestConsoleClientsInBrowser|TestMetricsAfterTraffic|TestMetricsISRShrink|TestClusterCommands|TestClusterBalance|TestFaultClusterEtcdCutAndRestart|TestKeystoreTypeReadsEitherFormat
check: lint versitygw
	$(GO) test -short -timeout 5m -skip '^($(CHECK_SKIP))$$' $(TESTFLAGS) \
	  $$($(GO) list ./... | grep -vxF "$$(printf 'github.com/samsa-io/samsa/%s\n' $(CHECK_SLOW_PKGS))")

## test: install what the tests need, lint, then every test with the race detector
test: test-deps lint
	@if [ -z "$(RACE)" ]; then echo "make test: no C compiler for cgo; running WITHOUT the race detector" >&2; fi
	$(GO) test $(RACE) -timeout 28m $(TESTFLAGS) ./...
	$(MAKE) --no-print-directory docker-test

# Hooks for the client libraries the compat tests drive. Each installs into
# the working tree (git-ignored) so that a fresh clone needs nothing else.
# The downloads and builds run side by side (a fresh machine spends
# minutes on promtool's build and Maven's resolution alone); the two apt
# installs share apt's lock, so they run after, one at a time.
test-deps:
	$(MAKE) --no-print-directory -j5 go-deps java-deps python-deps node-deps promtool versitygw
	$(MAKE) --no-print-directory chromium netns-deps docker-deps

go-deps:
	$(GO) mod download

# compat/java: kafka-clients 4.x and 3.x, Kafka Streams, Connect standalone
# (Maven, into compat/java/*/target), and Apache Kafka's own jars for the
# broker and its CLI tools (internal/kafkaref, into .cache/kafka-libs), and
# the test jar with its LocalTieredStorage (into .cache/kafka-tiered-libs).
JAVA_SOURCES := $(shell find compat/java -name pom.xml -o -name '*.java' 2>/dev/null | grep -v /target/)
java-deps: compat/java/kafka4/target/.compat.stamp
	$(GO) run ./compat/matrix -fetch-kafka
compat/java/kafka4/target/.compat.stamp: $(JAVA_SOURCES)
	@command -v mvn >/dev/null || { echo "make java-deps: mvn (Maven) and a JDK 17+ are needed" >&2; exit 1; }
	mvn -q -B -f compat/java/pom.xml package
	mkdir -p $(@D) && touch $@
# compat/python: confluent-kafka (librdkafka) and kafka-python in .venv
python-deps: .venv/.compat.stamp
.venv/.compat.stamp: compat/python/requirements.txt
	python3 -m venv .venv
	.venv/bin/pip install -q --disable-pip-version-check -r compat/python/requirements.txt
	touch $@
# compat/node: kafkajs and @confluentinc/schemaregistry, exactly as
# package-lock.json pins them
node-deps: compat/node/node_modules/.compat.stamp
compat/node/node_modules/.compat.stamp: compat/node/package.json compat/node/package-lock.json
	npm ci --prefix compat/node --no-audit --no-fund --loglevel=error
	touch $@

## compat: the compatibility matrix against samsa (client × scenario; non-zero on any failure)
# make compat COMPATFLAGS='-clients kafkajs' runs only the matching clients;
# COMPATFLAGS=-readme records the table in README.md.
COMPATFLAGS ?=
compat: build java-deps python-deps node-deps
	$(GO) run ./compat/matrix -samsa bin/samsa $(COMPATFLAGS)

## compat-reference: the same matrix against Apache Kafka 4.x (must pass)
compat-reference: java-deps python-deps node-deps
	$(GO) run ./compat/matrix -reference $(COMPATFLAGS)

## lint: gofmt, go vet, staticcheck
lint: $(STATICCHECK)
	@unformatted="$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags docker ./...
	$(STATICCHECK) -tags docker ./...

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

promtool: $(PROMTOOL)
$(PROMTOOL):
	GOBIN=$(dir $@) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)

versitygw: $(VERSITYGW)
$(VERSITYGW):
	GOBIN=$(dir $@) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

# chromium: headless Chromium from Debian's packages, for the console's
# browser test (httpapi, driven by chromedp); installed only when missing.
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }

# netns-deps: ip, iptables and tc for the fault suite (internal/chaos), from
# Debian's iproute2 and iptables; installed only when missing.
netns-deps:
	@command -v ip >/dev/null && command -v tc >/dev/null && command -v iptables >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq iproute2 iptables; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq iproute2 iptables; fi; }

# docker-deps: Debian's docker.io (the engine; dockerd is started by the
# test when none runs) and a compose: the v2 plugin where present, else
# Debian's docker-compose (v1.29, which reads the compose file as v2 does).
docker-deps:
	@command -v dockerd >/dev/null && { docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; } || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose; fi; }

## docker-test: docker-compose.yml for real (root: starts dockerd with
## --iptables=false when none runs, builds the image, brings the stack up,
## kills a broker under acks=all load, brings it down; make test runs it
## after the other tests, the fault suite's included)
docker-test: docker-deps
	$(GO) test $(RACE) -count=1 -timeout 15m -tags docker -run '^TestDockerCompose$$' -v ./internal/deploy

## chaos: every phase of the fault suite (root: three brokers and an etcd in
## network namespaces; make test runs its short profile)
chaos: netns-deps
	$(GO) test -count=1 -timeout 60m -run '^TestChaos$$' -v ./internal/chaos -chaos.full

## chaos-kafka: the same fault suite against Apache Kafka 4.4 (root: three
## KRaft nodes in combined mode, 512 MiB heap each, in the same namespaces;
## java, and mvn once for the jars); not in make test
chaos-kafka: netns-deps
	$(GO) test -count=1 -timeout 60m -run '^TestChaos$$' -v ./internal/chaos -chaos.full -chaos.broker=kafka

## console-screenshot: docs/console.png, the README's picture of the console
console-screenshot: chromium
	@dir="$$(mktemp -d)"; \
	SAMSA_CONSOLE_ARTIFACTS="$$dir" $(GO) test -count=1 -run '^TestConsoleInBrowser$$' ./httpapi/ && \
	mkdir -p docs && cp "$$dir/topic.png" docs/console.png && rm -rf "$$dir" && echo "wrote docs/console.png"

## fuzz: every Fuzz* target of every package, FUZZTIME each
fuzz:
	@$(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
	  grep -qs '^func Fuzz' "$$dir"/*_test.go || continue; \
	  targets="$$($(GO) test -list '^Fuzz' $$pkg </dev/null)" || { echo "$$targets"; exit 1; }; \
	  for target in $$(echo "$$targets" | grep '^Fuzz'); do \
	    echo "== $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg </dev/null; \
	  done; \
	done

## bench: samsa against Apache Kafka, side by side (not part of make test)
bench:
	$(GO) run ./bench $(if $(filter-out 0,$(BENCH_QUICK)),-quick) $(BENCHFLAGS)
	$(GO) run ./bench -scale $(if $(filter-out 0,$(BENCH_QUICK)),-quick) $(SCALEFLAGS)
	$(GO) run ./bench -link $(if $(filter-out 0,$(BENCH_QUICK)),-quick)
	$(GO) run ./bench -registry $(if $(filter-out 0,$(BENCH_QUICK)),-quick)
	$(GO) run ./bench -restproxy $(if $(filter-out 0,$(BENCH_QUICK)),-quick)

clean:
	rm -rf bin
