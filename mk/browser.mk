# Headless Chromium for the status page's browser test
# (internal/tests/e2e TestStatusPageInBrowser).
#
#   make chromium   installs Debian's chromium when it is missing
#
# `make test` depends on it: under CI the browser test fails without
# Chromium; elsewhere it skips and names this target.

TEST_PREREQS += chromium

.PHONY: chromium

chromium: ## install Debian's chromium (the status page's browser test) when missing
	@command -v chromium >/dev/null || { echo "installing Debian package: chromium"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
