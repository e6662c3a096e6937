# Coffer. The two set-up commands on a fresh machine with Go:
#   make run    start everything (private PostgreSQL, dev chain, demo operator)
#   make test   run every test against a throwaway PostgreSQL cluster
# Everything else they need is installed from this repository's own pins.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
TOOLS := $(CURDIR)/.tools

# Pinned tools. Plugin versions follow the runtime libraries in go.mod, so generated code
# always matches what it is compiled against.
BUF_VERSION           := v1.75.0
GOLANGCI_LINT_VERSION := v2.15.0
GETH_VERSION          := v1.16.7
SQLC_VERSION          := v1.30.0
KUSTOMIZE_VERSION     := v5.5.0
PROTOVALIDATE_VERSION := v1.2.2
PROTOBUF_VERSION      := $(shell $(GO) list -m -f '{{.Version}}' google.golang.org/protobuf)
CONNECT_VERSION       := $(shell $(GO) list -m -f '{{.Version}}' connectrpc.com/connect)
GETH_LIB_VERSION      := $(shell $(GO) list -m -f '{{.Version}}' github.com/ethereum/go-ethereum)

# What `coffer version` reports for release builds (make build, make image); override on the
# command line: make image VERSION=v1.2.0.
VERSION     := $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_TIME  := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/cofferhq/coffer/server/internal/version
# Release builds leave out `coffer dev` and its embedded dev chain, a whole go-ethereum node that
# `coffer serve` never runs: ~12 MiB of idle RSS (server/internal/devenv/run_nodev.go).
RELEASE_TAGS := nodev
LDFLAGS     := -s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).buildTime=$(BUILD_TIME)
IMAGE       ?= coffer:$(VERSION)

BUF                  := $(TOOLS)/buf
STAMP                := $(TOOLS)/.stamps
PROTOVALIDATE_PROTO  := .deps/protovalidate/buf/validate/validate.proto

.PHONY: build image buildah kustomize deps run test stress chaos chaos-regressions gen check-gen widget check-widget lint bench ci tools postgres npm chromium curl geth clean help

help:
	@echo "make run        start Coffer with embedded defaults (coffer dev; ARGS=\"--addr … --data-dir …\")"
	@echo "make test       run every test (throwaway PostgreSQL cluster)"
	@echo "make stress     every package's tests, 3 copies at once, under CPU contention (flakes show here)"
	@echo "make chaos      2 API + 2 worker replicas under faults, invariants checked (CHAOS_MINUTES=3, CHAOS_SEED=1)"
	@echo "make chaos-regressions  every kept chaos seed (server/chaos/regressions.go)"
	@echo "make gen        regenerate protobuf code, contract bindings"
	@echo "make widget     build the widget and the panel into server/internal/webui/dist"
	@echo "make lint       buf lint, go vet, golangci-lint (.golangci.yml), gofmt"
	@echo "make bench      run the benchmarks and print the figures"
	@echo "make build      bin/coffer: static, with its version (make build VERSION=v1.2.0)"
	@echo "make image      the container image $(IMAGE) (buildah; offline: FROM scratch, see Containerfile)"
	@echo "make ci         what .ci/run runs: generation check, lint, tests"

# ARGS go to coffer dev, e.g. make run ARGS="--addr 127.0.0.1:9090 --data-dir /tmp/x"
# (coffer dev --help lists them). The binary is built first, saying so (a cold build takes a
# minute or more, a warm one seconds), into .coffer/bin; then exec'd, so that Ctrl-C reaches
# coffer itself and make waits for its clean stop.
COFFER_BIN := .coffer/bin/coffer
run: postgres
	@echo "Compiling coffer into $(COFFER_BIN) (the first build takes a minute or two; later ones seconds)..."
	@start=$$(date +%s); $(GO) build -o $(COFFER_BIN) ./server/cmd/coffer; \
		echo "Compiled in $$(( $$(date +%s) - start )) s. Starting coffer dev $(ARGS) (PostgreSQL, the dev chain, the API)..."
	@exec $(COFFER_BIN) dev $(ARGS)

# geth --dev runs the end-to-end tests (server/e2e); chromium and widget/'s packages the
# browser tests (server/internal/webui); the TypeScript SDK's tests verify the webhooks the
# server wrote to sdk/testdata.
# -timeout 30m: server/deploy's TestImage compiles the release binary from scratch (-trimpath
# -tags nodev share no build cache with the tests), which took over go test's default 10 minutes
# on a 2-core machine busy with the other packages' tests.
test: postgres geth npm chromium buildah kustomize curl
	PATH="$(TOOLS):$$PATH" $(GO) test -count=1 -timeout 30m ./...
	cd sdk/go && $(GO) test -count=1 ./...
	cd sdk/ts && npm test --silent

# Every package's tests, COPIES (3) copies of each at once while busy loops saturate the CPUs:
# a test that passes alone but fails here is a flake, fixed at its cause (.ci/stress).
stress: postgres geth npm chromium curl
	PATH="$(TOOLS):$$PATH" bash .ci/stress

# Chaos: two API and two worker replicas on one PostgreSQL and geth --dev, under load, with
# replicas killed, PostgreSQL restarted and the webhook receiver failing on a schedule derived
# from the seed; the invariants are checked at the end and a report written (server/chaos).
# CHAOS_MINUTES=15 for a long run; CHAOS_ENFORCE_RECOVERY=1 fails on missed recovery targets;
# CHAOS_REPORT=path writes the report there.
chaos: postgres geth
	PATH="$(TOOLS):$$PATH" CHAOS_MINUTES=$${CHAOS_MINUTES:-3} CHAOS_SEED=$${CHAOS_SEED:-1} \
		$(GO) test -count=1 -run '^TestChaos$$' -timeout 60m -v ./server/chaos/

# Every seed that ever failed (flaky is failing), each for the minutes it failed with.
chaos-regressions: postgres geth
	PATH="$(TOOLS):$$PATH" CHAOS_REGRESSIONS=1 $(GO) test -count=1 -run '^TestChaosRegressions$$' -timeout 120m -v ./server/chaos/

# A static release binary (no libc: it runs FROM scratch and on any Linux), reproducible paths,
# the version `coffer version` prints, and no `coffer dev` (RELEASE_TAGS).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(RELEASE_TAGS) -ldflags '$(LDFLAGS)' -o bin/coffer ./server/cmd/coffer

# The container image, built offline: the binary is built here and the Containerfile's
# `prebuilt` target copies it with the host's CA bundle into a FROM scratch image (no base
# image is pulled). IMAGE=registry.example/coffer:v1.2.0 names it otherwise.
image: buildah
	@mkdir -p bin/image
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -tags $(RELEASE_TAGS) -ldflags '$(LDFLAGS)' -o bin/image/coffer ./server/cmd/coffer
	@test -s /etc/ssl/certs/ca-certificates.crt || { echo "no /etc/ssl/certs/ca-certificates.crt: apt-get install ca-certificates"; exit 1; }
	cp /etc/ssl/certs/ca-certificates.crt bin/image/ca-certificates.crt
	buildah bud --quiet --target prebuilt --build-arg VERSION=$(VERSION) -f Containerfile -t $(IMAGE) .
	@echo "built $(IMAGE)"

# --- tools -----------------------------------------------------------------------------

$(STAMP)/buf@$(BUF_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	@touch $@

# golangci-lint is built with this repository's Go, so it understands the go.mod version.
$(STAMP)/golangci-lint@$(GOLANGCI_LINT_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@touch $@

$(STAMP)/protoc-gen-go@$(PROTOBUF_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOBUF_VERSION)
	@touch $@

$(STAMP)/protoc-gen-connect-go@$(CONNECT_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(CONNECT_VERSION)
	@touch $@

$(STAMP)/abigen@$(GETH_LIB_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install github.com/ethereum/go-ethereum/cmd/abigen@$(GETH_LIB_VERSION)
	@touch $@

$(STAMP)/sqlc@$(SQLC_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install github.com/sqlc-dev/sqlc/cmd/sqlc@$(SQLC_VERSION)
	@touch $@

$(STAMP)/geth@$(GETH_VERSION):
	@mkdir -p $(STAMP)
	GOBIN=$(TOOLS) $(GO) install github.com/ethereum/go-ethereum/cmd/geth@$(GETH_VERSION)
	@touch $@

tools: $(STAMP)/buf@$(BUF_VERSION) $(STAMP)/protoc-gen-go@$(PROTOBUF_VERSION) \
	$(STAMP)/protoc-gen-connect-go@$(CONNECT_VERSION) $(STAMP)/abigen@$(GETH_LIB_VERSION) \
	$(STAMP)/sqlc@$(SQLC_VERSION) $(STAMP)/golangci-lint@$(GOLANGCI_LINT_VERSION)

# buf and buf/validate/validate.proto, for `buf curl --schema .` (README, Using the API).
deps: $(STAMP)/buf@$(BUF_VERSION) $(PROTOVALIDATE_PROTO)

# geth --dev for end-to-end tests.
geth: $(STAMP)/geth@$(GETH_VERSION)

# buf/validate/validate.proto comes from the protovalidate Go module (BSR deps are unreachable).
$(PROTOVALIDATE_PROTO):
	@dir=$$($(GO) mod download -json github.com/bufbuild/protovalidate@$(PROTOVALIDATE_VERSION) | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); \
	mkdir -p .deps/protovalidate && cp -r "$$dir/proto/protovalidate/buf" .deps/protovalidate/ && chmod -R u+w .deps

# npm packages from the committed lockfiles.
npm: sdk/ts/node_modules/.package-lock.json server/internal/contracts/node_modules/.package-lock.json \
	widget/node_modules/.package-lock.json

%/node_modules/.package-lock.json: %/package-lock.json
	cd $* && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# PostgreSQL server binaries for the private clusters of `coffer dev` and the tests.
postgres:
	@if command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; else \
		echo "Installing PostgreSQL server binaries (apt-get install postgresql)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi

# Debian's chromium for the browser tests (playwright-core drives it; no browser is downloaded)
# and zbarimg (zbar-tools), with which they decode the deposit screen's QR code.
chromium:
	@if [ -x /usr/bin/chromium ] && command -v zbarimg >/dev/null; then :; else \
		echo "Installing chromium and zbar-tools (apt-get)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium zbar-tools >/dev/null; \
	fi

# The Kubernetes manifests' test renders them with `kubectl kustomize`; where kubectl is
# missing, with kustomize itself (the version kubectl 1.32 bundles), pinned here.
kustomize:
	@if command -v kubectl >/dev/null || [ -x $(TOOLS)/kustomize ]; then :; else \
		echo "Installing kustomize $(KUSTOMIZE_VERSION) into .tools"; \
		GOBIN=$(TOOLS) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION); \
	fi

# curl runs the README's walkthrough in its test (server/cmd/coffer/walkthrough_test.go).
curl:
	@if command -v curl >/dev/null; then :; else \
		echo "Installing curl (apt-get)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq curl >/dev/null; \
	fi

# Debian's buildah for make image and its test (server/deploy/image_test.go).
buildah:
	@if command -v buildah >/dev/null; then :; else \
		echo "Installing buildah (apt-get)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq buildah >/dev/null; \
	fi

# --- generation --------------------------------------------------------------------------

gen: tools npm $(PROTOVALIDATE_PROTO)
	rm -rf gen/go/coffer gen/ts sdk/ts/src/gen
	$(BUF) generate
	ABIGEN=$(TOOLS)/abigen server/internal/contracts/generate.sh
	$(TOOLS)/sqlc generate -f server/internal/store/dbsqlc/sqlc.yaml

GENERATED := gen sdk server/internal/contracts server/internal/store/dbsqlc

# Fails when the committed generated code differs from what the sources generate.
check-gen: gen
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		echo "Generated code is stale; run 'make gen' and commit:"; git status --porcelain -- $(GENERATED); \
		git --no-pager diff --stat -- $(GENERATED); exit 1; fi

# The widget and the panel (Vite), built into server/internal/webui/dist, which the binary
# embeds; the build fails when the widget is over its 100 KB gzip budget.
widget: widget/node_modules/.package-lock.json
	cd widget && npm run build --silent

# Fails when the committed build differs from what the sources build.
check-widget: widget
	@if [ -n "$$(git status --porcelain -- server/internal/webui/dist)" ]; then \
		echo "The committed widget build is stale; run 'make widget' and commit:"; \
		git status --porcelain -- server/internal/webui/dist; exit 1; fi

lint: tools $(PROTOVALIDATE_PROTO)
	$(BUF) lint
	$(GO) vet ./...
	$(TOOLS)/golangci-lint run --modules-download-mode=readonly ./...
	cd sdk/go && $(GO) vet ./... && $(TOOLS)/golangci-lint run --modules-download-mode=readonly ./...
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$bad" ]; then echo "gofmt:"; echo "$$bad"; exit 1; fi

# --- benchmarks --------------------------------------------------------------------------

bench: postgres geth
	PATH="$(TOOLS):$$PATH" $(GO) test -run '^$$' -bench . -benchtime 6x -count 1 -timeout 30m ./server/bench/

ci: check-gen check-widget lint test chaos chaos-regressions

clean:
	rm -rf .tools .deps
