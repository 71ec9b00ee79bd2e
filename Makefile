# llmgw build, test and demo entry points.
#
#   make demo   builds everything and runs the local demo
#   make test   builds everything and runs every check CI runs
#   make quick  the fast loop: gofmt, go vet, go test -short (no -race)
#   make help   lists every target with its one-line description
#
# A target documents itself with a "## " comment on its rule line; `make
# help` prints those.
# Both install what they need: Debian packages with apt-get when missing, Go
# tools through the module proxy, and bin/consul (built once, cached outside
# the repository so a fresh clone on the same machine reuses it).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
export CGO_ENABLED := 1

APT_PKGS := libzmq3-dev pkg-config protobuf-compiler
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

CONSUL_VERSION := 1.14.11
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/llmgw
CONSUL_CACHE := $(CACHE_DIR)/consul-$(CONSUL_VERSION)
export LLMGW_CONSUL_BIN := $(CURDIR)/bin/consul

# Fuzz targets run briefly in `make test`; `make fuzz FUZZTIME=10m` runs longer.
# The default is a count, not a duration: Go 1.26's coordinator can fail a
# time-limited run at its deadline with "context deadline exceeded" and no
# crasher (golang/go#75804), which would make CI flaky.
FUZZTIME ?= 10000x
FUZZ_TARGETS := $(shell grep -rl --include='*_test.go' '^func Fuzz' . 2>/dev/null | xargs -r dirname | sort -u)

.PHONY: all help deps build test quick vet fmt-check unit fuzz demo bench clean

all: build ## build everything (the default)

help: ## list the targets and what each does
	@grep -hE '^[A-Za-z0-9_./-]+:[^=]*## ' $(MAKEFILE_LIST) | \
		sed -E 's/^([^:]+):[^#]*## (.*)$$/\1\t\2/' | sort -u | \
		awk -F '\t' '{ printf "  %-20s %s\n", $$1, $$2 }'

# Each part of the project may add its own targets in mk/<part>.mk, and
# prerequisites of `make test` (e.g. test data) to TEST_PREREQS.
TEST_PREREQS :=
include $(wildcard mk/*.mk)

deps: ## install missing Debian packages (libzmq3-dev, pkg-config, protobuf-compiler, npm)
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@# npm fetches the tokenizer test files and the client SDKs (mk/sdk.mk,
	@# which also installs the Node 22 runtime the SDKs need).
	@command -v npm >/dev/null || { echo "installing Debian package: npm"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }

# The commit built, from git (a short hash, "+dirty" when the tree has
# changes, as Go's vcs.modified counts them), empty outside a checkout. Go
# stamps binaries itself, but it takes only a .git directory for a
# repository's root: in a linked git worktree it stamps nothing, or the
# commit of a checkout enclosing the worktree.
BUILD_COMMIT = $(shell git rev-parse --short=7 HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo +dirty)
BUILD_COMMIT_VAR = github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report.linkedCommit

build: deps ## compile every package and put the binaries in bin/
	$(GO) build ./...
	@# llmgw bench's provenance records the commit BUILD_COMMIT links in;
	@# -buildvcs=auto stamps Go's own as well, even where GOFLAGS turns
	@# stamping off.
	$(GO) build -buildvcs=auto -ldflags "-X $(BUILD_COMMIT_VAR)=$(BUILD_COMMIT)" -o bin/ ./cmd/...

# bin/consul: the MPL-2.0 Consul agent, built from the nested module in
# consul/agent so the main go.mod stays lean. About 8 minutes cold on 2 cores.
bin/consul: consul/agent/go.mod consul/agent/go.sum ## build the Consul agent tests run (once; cached)
	@mkdir -p bin "$(CACHE_DIR)"
	@if [ ! -x "$(CONSUL_CACHE)" ]; then \
		echo "building consul $(CONSUL_VERSION) (once; cached in $(CONSUL_CACHE))"; \
		cd consul/agent && $(GO) build -trimpath -o "$(CONSUL_CACHE).tmp" github.com/hashicorp/consul && mv "$(CONSUL_CACHE).tmp" "$(CONSUL_CACHE)"; \
	fi
	cp "$(CONSUL_CACHE)" $@

fmt-check: ## fail when a tracked Go file is not gofmt-clean
	@out=$$(gofmt -l $$(git ls-files '*.go') ); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet: deps ## go vet every package
	$(GO) vet ./...

unit: deps bin/consul $(TEST_PREREQS) ## every test, with -race
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run '^TestScale' ./router/server/ # left out of -race builds

# The fast loop: no -race, -short (tests that start whole fleets, Consul
# agents or browsers, or run long soaks, skip), no Consul build and no
# test-data fetch (tests that need the data skip outside CI). go test's own
# vet pass is off: it runs a subset of the analyzers the vet prerequisite
# has just run on the same packages.
quick: fmt-check vet ## the fast loop: gofmt, go vet, go test -short without -race
	$(GO) test -short -count=1 -vet=off ./...

fuzz: deps ## run every fuzz target briefly (FUZZTIME=10m for longer)
	@for pkg in $(FUZZ_TARGETS); do \
		for target in $$(grep -h '^func Fuzz' $$pkg/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/'); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

test: fmt-check build vet lint proto-check unit fuzz ## every check CI runs

demo: build ## run the whole chain locally and compare routing policies
	./bin/llmgw demo

bench: build ## every Go benchmark, and the routing-policy comparison
	$(GO) test -run '^$$' -bench . -benchtime 2s ./cmd/vllm-sim/...

clean: ## remove bin/
	rm -rf bin
