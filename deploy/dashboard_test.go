package deploy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDashboardShape: the dashboard imports into a current Grafana with
// the data source as a variable, has the model and router variables, and
// every panel queries that data source with at least one expression.
func TestDashboardShape(t *testing.T) {
	b, err := os.ReadFile("grafana/llmgw.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		SchemaVersion int `json:"schemaVersion"`
		Inputs        []struct {
			Name, Type string
		} `json:"__inputs"`
		Templating struct {
			List []struct {
				Name, Type string
				Datasource *struct{ UID string } `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type, Title string
			Datasource  *struct{ Type, UID string } `json:"datasource"`
			Targets     []struct {
				Expr       string
				Datasource *struct{ UID string } `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d; want a current one (36 or later)", d.SchemaVersion)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" {
		t.Errorf("__inputs %+v; want the one data source input DS_PROMETHEUS", d.Inputs)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s does not query ${datasource}", v.Name)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "model": "query", "router": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s is %q; want %q", name, vars[name], typ)
		}
	}
	var titles []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		titles = append(titles, strings.ToLower(p.Title))
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets; want ${datasource} and a query", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q has a target without an expression or on another data source", p.Title)
			}
		}
	}
	all := strings.Join(titles, "\n")
	for _, topic := range []string{"routing mode", "predicted vs reported", "overhead", "ingest lag", "gaps", "queue depth", "429s", "per-tenant", "peer", "hot-prefix copies"} {
		if !strings.Contains(all, topic) {
			t.Errorf("no panel about %q among:\n%s", topic, all)
		}
	}
}
