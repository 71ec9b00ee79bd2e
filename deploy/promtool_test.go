package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// promtoolBin finds promtool ($LLMGW_PROMTOOL, else on PATH; Debian's
// prometheus package puts it in /usr/bin). Missing, it fails the test
// under CI and skips it elsewhere, saying how to install it.
func promtoolBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LLMGW_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	const how = "promtool not found: install Debian's prometheus package (apt-get install prometheus; make test does) or set LLMGW_PROMTOOL"
	if os.Getenv("CI") != "" {
		t.Fatal(how)
	}
	t.Skip(how)
	return ""
}

func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtoolBin(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRulesCheck: promtool accepts every rule of the file.
func TestRulesCheck(t *testing.T) {
	n := 0
	for _, g := range readRules(t).Groups {
		n += len(g.Rules)
	}
	out := promtool(t, ".", "check", "rules", "prometheus/llmgw.rules.yml")
	if want := fmt.Sprintf("SUCCESS: %d rules found", n); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: want %q in\n%s", want, out)
	}
}

// TestRulesUnitTests runs the rules' unit tests.
func TestRulesUnitTests(t *testing.T) {
	if out := promtool(t, "prometheus", "test", "rules", "llmgw.rules.test.yml"); !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules:\n%s", out)
	}
}

// ruleTests is the part of a promtool test file the checks read.
type ruleTests struct {
	Tests []struct {
		Name   string `yaml:"name"`
		Series []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		Alerts []struct {
			Alert string `yaml:"alertname"`
			Exp   []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertTestedAndDocumented: each alert waits a for:, has a
// severity, a summary, and a description naming a metric of its
// expression and a runbook row of README.md that exists; its unit test
// feeds at least two series (one firing, one not) and expects it firing.
func TestEveryAlertTestedAndDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("prometheus", "llmgw.rules.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rt ruleTests
	if err := yaml.Unmarshal(b, &rt); err != nil {
		t.Fatalf("llmgw.rules.test.yml: %v", err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.For == "" {
				t.Errorf("%s has no for:", r.Alert)
			}
			if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q; want warning or critical", r.Alert, r.Labels["severity"])
			}
			desc := r.Annot["description"]
			if r.Annot["summary"] == "" || desc == "" {
				t.Errorf("%s lacks a summary or a description", r.Alert)
			}
			if !slices.ContainsFunc(metricNames(r.Expr), func(m string) bool { return strings.Contains(desc, m) }) {
				t.Errorf("%s: description names none of the metrics of %q", r.Alert, r.Expr)
			}
			row, ok := runbookRow(desc)
			if !ok || !strings.Contains(string(readme), "| "+row+" |") {
				t.Errorf("%s: description names runbook row %q, which README.md's troubleshooting table lacks", r.Alert, row)
			}
			fired, series := false, 0
			for _, tc := range rt.Tests {
				for _, a := range tc.Alerts {
					if a.Alert == r.Alert {
						series = max(series, len(tc.Series))
						fired = fired || len(a.Exp) > 0
					}
				}
			}
			if !fired || series < 2 {
				t.Errorf("%s: no unit test that fires it with a second series that does not (fired %v, series %d)", r.Alert, fired, series)
			}
		}
	}
	if alerts < 7 {
		t.Errorf("%d alerts; want at least the 7 the troubleshooting table covers", alerts)
	}
}

// runbookRow returns the quoted row name after "Runbook: deploy/README.md, ".
func runbookRow(desc string) (string, bool) {
	_, rest, ok := strings.Cut(desc, `deploy/README.md, "`)
	if !ok {
		return "", false
	}
	row, _, ok := strings.Cut(rest, `"`)
	return row, ok
}
