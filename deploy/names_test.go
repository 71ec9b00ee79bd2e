package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// promqlWords are PromQL keywords that read like metric names.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

// labelLists are the keywords followed by a parenthesised list of label
// names, not metrics.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

func identStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func identPart(c byte) bool { return identStart(c) || c >= '0' && c <= '9' }

// metricNames returns the metric names a PromQL expression selects: the
// identifiers that are not functions or aggregations (followed by "("),
// keywords, label names (inside {} and after by, on, ...), durations
// (inside []), numbers, strings or Grafana variables ($model, ${DS}).
func metricNames(expr string) []string {
	var out []string
	skipTo := func(i int, close byte) int {
		for i < len(expr) && expr[i] != close {
			if q := expr[i]; q == '"' || q == '\'' || q == '`' {
				i = skipString(expr, i)
				continue
			}
			i++
		}
		return i + 1
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipTo(i+1, '}')
		case c == '[':
			i = skipTo(i+1, ']')
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipTo(i+1, '}')
			}
			for i < len(expr) && identPart(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (identPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case identStart(c):
			j := i
			for j < len(expr) && identPart(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			switch {
			case labelLists[strings.ToLower(word)] && k < len(expr) && expr[k] == '(':
				j = skipTo(k+1, ')')
			case promqlWords[strings.ToLower(word)]:
			case k < len(expr) && expr[k] == '(':
				// a function or an aggregation
			case aggregationModifier(expr[k:]):
				// an aggregation: sum by (...) (...)
			default:
				out = append(out, word)
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// aggregationModifier reports whether s starts with by or without and a
// parenthesis, as after an aggregation operator.
func aggregationModifier(s string) bool {
	for _, kw := range []string{"by", "without"} {
		if rest, ok := strings.CutPrefix(strings.ToLower(s), kw); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t\n"), "(") {
			return true
		}
	}
	return false
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return i
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`llmgw_replica_kv_events_missing == 1`, []string{"llmgw_replica_kv_events_missing"}},
		{`histogram_quantile(0.99, sum by (le, stage) (rate(llmgw_routing_overhead_seconds_bucket{instance=~"$router"}[$__rate_interval])))`,
			[]string{"llmgw_routing_overhead_seconds_bucket"}},
		{`sum(rate(vllm:prefix_cache_hits_total{model_name="$model"}[5m])) / sum(rate(vllm:prefix_cache_queries_total[5m]))`,
			[]string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"}},
		{`llmgw_peer_routers == 0 and llmgw_peer_routers_listed > 1`, []string{"llmgw_peer_routers", "llmgw_peer_routers_listed"}},
		{`a unless on (instance) b offset 5m or ignoring(x) group_left(y) c`, []string{"a", "b", "c"}},
		{`count by (model, mode) (llmgw_replica_info{mode="a}b", healthy='x"'}) > bool 2e3`, []string{"llmgw_replica_info"}},
		{`${DS_PROMETHEUS} + llmgw:shed:rate5m`, []string{"llmgw:shed:rate5m"}},
		{`sum without(le) ({__name__="x"})`, nil},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q; want %q", tt.expr, got, tt.want)
		}
	}
}

// FuzzMetricNames: any input scans to names that are PromQL identifiers,
// without a panic.
func FuzzMetricNames(f *testing.F) {
	f.Add(`sum by (le) (rate(x_bucket{a="b"}[5m]))`)
	f.Add(`"unterminated {`)
	f.Add(`${a} $b [ { by (`)
	f.Fuzz(func(t *testing.T, expr string) {
		for _, n := range metricNames(expr) {
			if n == "" || !identStart(n[0]) {
				t.Fatalf("name %q from %q", n, expr)
			}
			for i := range len(n) {
				if !identPart(n[i]) {
					t.Fatalf("name %q from %q", n, expr)
				}
			}
		}
	})
}

// rules is the part of a Prometheus rule file the tests read.
type rules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string            `yaml:"record"`
			Alert  string            `yaml:"alert"`
			Expr   string            `yaml:"expr"`
			For    string            `yaml:"for"`
			Labels map[string]string `yaml:"labels"`
			Annot  map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) rules {
	t.Helper()
	b, err := os.ReadFile("prometheus/llmgw.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var r rules
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatalf("prometheus/llmgw.rules.yml: %v", err)
	}
	return r
}

// dashboardExprs returns the PromQL of every panel target and template
// variable query of the dashboard, each with where it is.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("grafana/llmgw.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/llmgw.json: %v", err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			if tg.Expr != "" {
				out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		// label_values(metric{...}, label): the metric is the first argument.
		if inner, ok := strings.CutPrefix(q, "label_values("); ok {
			out["variable "+v.Name] = strings.TrimSuffix(inner[:strings.LastIndex(inner, ",")], ")")
		}
	}
	return out
}

// namedMetrics returns every metric the dashboard and the rules select,
// without the rules' own recorded series, each with one place naming it.
func namedMetrics(t *testing.T) map[string]string {
	t.Helper()
	r := readRules(t)
	recorded := map[string]bool{}
	exprs := dashboardExprs(t)
	for _, g := range r.Groups {
		for _, rl := range g.Rules {
			if rl.Record != "" {
				recorded[rl.Record] = true
				exprs["recording rule "+rl.Record] = rl.Expr
			} else {
				exprs["alert "+rl.Alert] = rl.Expr
			}
		}
	}
	out := map[string]string{}
	for where, e := range exprs {
		for _, n := range metricNames(e) {
			if !recorded[n] {
				out[n] = where
			}
		}
	}
	return out
}
