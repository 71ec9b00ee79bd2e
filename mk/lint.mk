# Static analysis beyond go vet.
#
#   make lint   runs staticcheck on every package and checks every
#               hand-written Go file's import groups (part of `make test`)
#
# staticcheck is installed at a pinned version into bin/lint-tools through
# the module proxy, like the protoc generators (mk/plugin.mk). 2026.2.2
# (module version v0.8.2) is the release that supports Go 1.26.
# staticcheck.conf at the root lists the checks and says why each one left
# out is left out.
#
# goimports -local (golang.org/x/tools, the version go.sum already pins)
# checks that this module's packages sit in a group of their own after the
# others; gofmt does not look at groups. It leaves a standard-library
# import in a group of its own where it finds it, which tools that add
# imports (maps, slices) do, so internal/tests/layering
# (TestStandardLibraryImportsFirst) checks that the standard library comes
# first. Generated files (*.pb.go) are left as protoc writes them.

STATICCHECK_VERSION := v0.8.2
GOIMPORTS_VERSION := v0.49.0
LINT_TOOLS := $(CURDIR)/bin/lint-tools
STATICCHECK := $(LINT_TOOLS)/staticcheck
GOIMPORTS := $(LINT_TOOLS)/goimports
GOIMPORTS_STAMP := $(LINT_TOOLS)/.goimports-$(GOIMPORTS_VERSION)

.PHONY: lint lint-tools

lint-tools: ## install staticcheck and goimports at their pinned versions into bin/lint-tools
	@mkdir -p $(LINT_TOOLS)
	@if ! "$(STATICCHECK)" -version 2>/dev/null | grep -q '($(STATICCHECK_VERSION:v%=%))'; then \
		echo "installing staticcheck $(STATICCHECK_VERSION) into $(LINT_TOOLS)"; \
		GOBIN=$(LINT_TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	@if [ ! -x "$(GOIMPORTS)" ] || [ ! -f "$(GOIMPORTS_STAMP)" ]; then \
		echo "installing goimports $(GOIMPORTS_VERSION) into $(LINT_TOOLS)"; \
		GOBIN=$(LINT_TOOLS) $(GO) install golang.org/x/tools/cmd/goimports@$(GOIMPORTS_VERSION) && \
		rm -f $(LINT_TOOLS)/.goimports-* && touch "$(GOIMPORTS_STAMP)"; \
	fi

lint: deps lint-tools ## staticcheck every package (config: staticcheck.conf), and import groups
	$(STATICCHECK) ./...
	@out=$$($(GOIMPORTS) -local github.com/llmgw/llmgw -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	if [ -n "$$out" ]; then echo "import groups need goimports -local github.com/llmgw/llmgw -w on:"; echo "$$out"; exit 1; fi
