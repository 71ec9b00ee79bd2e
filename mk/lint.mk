# Static analysis beyond go vet.
#
#   make lint   runs staticcheck on every package (part of `make test`)
#
# staticcheck is installed at a pinned version into bin/lint-tools through
# the module proxy, like the protoc generators (mk/plugin.mk). 2026.2.2
# (module version v0.8.2) is the release that supports Go 1.26.
# staticcheck.conf at the root lists the checks and says why each one left
# out is left out.

STATICCHECK_VERSION := v0.8.2
LINT_TOOLS := $(CURDIR)/bin/lint-tools
STATICCHECK := $(LINT_TOOLS)/staticcheck

.PHONY: lint lint-tools

lint-tools: ## install staticcheck at its pinned version into bin/lint-tools
	@mkdir -p $(LINT_TOOLS)
	@if ! "$(STATICCHECK)" -version 2>/dev/null | grep -q '($(STATICCHECK_VERSION:v%=%))'; then \
		echo "installing staticcheck $(STATICCHECK_VERSION) into $(LINT_TOOLS)"; \
		GOBIN=$(LINT_TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi

lint: deps lint-tools ## staticcheck every package (config: staticcheck.conf)
	$(STATICCHECK) ./...
