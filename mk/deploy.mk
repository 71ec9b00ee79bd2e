# The Grafana dashboard and Prometheus rules (deploy/).
#
#   make promtool   installs promtool (Debian package prometheus) when missing;
#                   go test ./deploy/ runs `promtool check rules` and
#                   `promtool test rules` with it

TEST_PREREQS += promtool

.PHONY: promtool check-rules

promtool: ## install promtool (Debian package prometheus) for the rules' tests
	@command -v promtool >/dev/null || { echo "installing Debian package: prometheus (for promtool)"; \
		$(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }

check-rules: promtool ## validate and unit-test deploy/prometheus/llmgw.rules.yml
	$(GO) test -count=1 -run 'Rules|Dashboard|MetricNames' ./deploy/
