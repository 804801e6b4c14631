# KillrChat: `make run` and `make test` are all a fresh machine needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help
CASSANDRA := scripts/cassandra.sh
GO_TEST_FLAGS ?= -race -count=1 -timeout 25m

# `make test` installs what it lacks when it can (scripts/test-deps.sh).
.PHONY: help run run-cluster run-cluster3 cassandra3-stop test test-unit test-deps check generate cassandra-start cassandra-stop cassandra-status bench load

help:
	@echo "make run              start Cassandra (unless CASSANDRA_HOSTS is set) and the app on :8080"
	@echo "make test             format/vet/templ checks, then every test against a real Cassandra and Chromium"
	@echo "make test-unit        the fast tier: the tests that need no Cassandra and no Chromium"
	@echo "make run-cluster      two app instances (:8080, :8081) sharing Cassandra and an embedded NATS"
	@echo "make run-cluster3     the same on three local Cassandra nodes (127.0.0.2-4, RF 3); make cassandra3-stop"
	@echo "make cassandra-start  start (or reuse) the local Cassandra node;  make cassandra-stop  stop it"
	@echo "make bench            benchmarks (figures for the issue notes)"

# A key kept on disk so sessions survive restarts of `make run`.
.session-key:
	@head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > $@

run: .session-key
	@if [ -z "$$CASSANDRA_HOSTS" ]; then $(CASSANDRA) start; fi
	@echo "KillrChat: http://localhost:8080"
	SESSION_KEY=$${SESSION_KEY:-$$(cat .session-key)} go run . $(ARGS)

# Two instances on one Cassandra; the first embeds the NATS server that
# carries live events between them. Log in on one, post, watch the other.
run-cluster: .session-key
	@if [ -z "$$CASSANDRA_HOSTS" ]; then $(CASSANDRA) start; fi
	go build -o .bin/killrchat .
	@echo "KillrChat instances: http://localhost:8080 and http://localhost:8081 (Ctrl-C stops both)"
	@trap 'kill 0' INT TERM EXIT; \
	SESSION_KEY=$$(cat .session-key) .bin/killrchat --addr :8080 --nats-embed 127.0.0.1:4222 & \
	sleep 2; SESSION_KEY=$$(cat .session-key) NATS_URL=nats://127.0.0.1:4222 .bin/killrchat --addr :8081 & \
	wait

# Three Cassandra nodes on 127.0.0.2-4 (scripts/cassandra.sh start --nodes
# 3), a keyspace of its own at NetworkTopologyStrategy dc1 = 3, and two app
# instances over NATS, as run-cluster. The nodes keep running after Ctrl-C
# (make cassandra3-stop stops them).
run-cluster3: .session-key
	$(CASSANDRA) start --nodes 3
	go build -o .bin/killrchat .
	@echo "KillrChat instances on the three-node cluster: http://localhost:8080 and http://localhost:8081 (Ctrl-C stops both)"
	@trap 'kill 0' INT TERM EXIT; \
	export SESSION_KEY=$$(cat .session-key) CASSANDRA_HOSTS=127.0.0.2,127.0.0.3,127.0.0.4 \
		CASSANDRA_KEYSPACE=killrchat3 CASSANDRA_REPLICATION=NetworkTopologyStrategy:dc1=3 CASSANDRA_DC=dc1; \
	.bin/killrchat --addr :8080 --nats-embed 127.0.0.1:4222 & \
	sleep 2; NATS_URL=nats://127.0.0.1:4222 .bin/killrchat --addr :8081 & \
	wait

cassandra3-stop:
	@$(CASSANDRA) stop --nodes 3

# go test runs two packages at a time on two cores and starts them in
# the order given: the longest first (a chaos run, then Chromium, HTTP,
# storage, the program against a Cassandra node with a password and TLS
# that it boots), so that the short ones fill the gaps at the end instead of a
# long one running alone.
LONG_PACKAGES := ./e2e/chaos ./e2e/browser ./handlers ./store ./cmd/cmdtest
test: test-deps check
	@if [ -z "$$CASSANDRA_HOSTS" ]; then $(CASSANDRA) start; fi
	go test $(GO_TEST_FLAGS) $(LONG_PACKAGES) ./...

# The fast tier: packages whose tests need no Cassandra and no Chromium
# (the domain, the use cases, the configuration, the live engine, the
# plumbing, views).
# make test runs them too, with the rest.
UNIT_PACKAGES := ./chat/... ./service/... ./cmd/ ./live/... ./views/... ./static/... ./web/... ./email/...
test-unit: check
	go test $(GO_TEST_FLAGS) $(UNIT_PACKAGES)

# JDK 17, Maven, Chromium, Node.js: installed when run as root with apt-get,
# else a list of what to install.
test-deps:
	@scripts/test-deps.sh

# Fast checks that CI would otherwise only find by reading the diff.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	go vet ./...
	@go tool templ generate >/dev/null 2>&1; if ! git diff --quiet -- '*_templ.go'; then echo "generated templ files were stale: commit the regenerated *_templ.go"; git diff --stat -- '*_templ.go'; exit 1; fi

generate:
	go tool templ generate

cassandra-start:
	@$(CASSANDRA) start

cassandra-stop:
	@$(CASSANDRA) stop

cassandra-status:
	@$(CASSANDRA) status

bench:
	@if [ -z "$$CASSANDRA_HOSTS" ]; then $(CASSANDRA) start; fi
	go test -run '^$$' -bench . -benchtime 2s ./store/ ./handlers/
