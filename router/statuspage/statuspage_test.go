package statuspage

import (
	"bytes"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var posInf = math.Inf(1)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// fakes are the page's sources as plain values: the interfaces are the
// package's own, so these are its inputs, not stand-ins for a router.
type fleet struct {
	replicas []ReplicaState
	models   []ModelState
}

func (f fleet) Replicas() []ReplicaState { return f.replicas }
func (f fleet) Models() []ModelState     { return f.models }

type router RouterState

func (r router) Router() RouterState { return RouterState(r) }

type decisions []Decision

func (d decisions) Recent() []Decision { return d }

func TestBuild(t *testing.T) {
	t.Parallel()
	f := fleet{
		models: []ModelState{{Name: "b"}, {Name: "a", IndexKeys: 10, IndexMax: 100}},
		replicas: []ReplicaState{
			{ID: "a/2", Model: "a", Mode: "approx", KVEvents: false, Healthy: true, PeerInFlight: 2},
			{ID: "a/1", Model: "a", Mode: "exact", KVEvents: true, Healthy: true, Driver: "node-1", PeerInFlight: 3,
				EngineKnown: true, EngineQueries: 200, EngineHits: 50, PredictedPrompt: 400, PredictedCached: 100},
			{ID: "b/1", Model: "b", Mode: "approx", KVEvents: true, Healthy: false},
			{ID: "c/1", Model: "c", Mode: "approx", KVEvents: true, Healthy: true, Draining: true, Health: "maintenance"},
		},
	}
	p := Build(now, 5, f, router{IngestOn: true}, decisions{{Replica: "a/1", Mode: "exact", PromptTokens: 64, CachedTokens: 48, Total: 1.5,
		Scores: []Score{{"prefix", 0.75}}, RunnerUp: "a/2", RunnerUpTotal: 0.5, Candidates: 2},
		{Replica: "a/2", Mode: "disaggregated", PromptTokens: 64, Total: 1, Candidates: 1, Prefill: "a/1", PrefillCachedTokens: 32},
		{Replica: "a/2", Mode: "exact", PromptTokens: 80, CachedTokens: 64, Total: 1, Candidates: 1, ContinuedFrom: "a/1"}})

	var names []string
	for _, m := range p.Models {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,c" {
		t.Fatalf("models %s; want a,b,c (sorted, c from its replica alone)", got)
	}
	a := p.Models[0]
	if a.PeerInFlight != 5 || a.Replicas[0].ID != "a/1" || a.Replicas[1].ID != "a/2" {
		t.Errorf("model a: peers' in flight %d, replicas %s %s; want 5, a/1 a/2", a.PeerInFlight, a.Replicas[0].ID, a.Replicas[1].ID)
	}
	for _, tc := range []struct {
		got, want string
	}{
		{a.Replicas[0].ModeReason, "driver node-1 holds its KV state"},
		{a.Replicas[0].EngineHitRate, "25.0%"},
		{a.Replicas[0].PredictedHitRate, "25.0%"},
		{a.Replicas[0].HealthText, "healthy"},
		{a.Replicas[1].ModeReason, "it does not advertise KV events (kv_events=false): routed on this router's history"},
		{a.Replicas[1].EngineHitRate, "n/a"},
		{a.Replicas[1].PredictedHitRate, "n/a"},
		{p.Models[1].Replicas[0].ModeReason, "it advertises KV events but no driver session holds its state (llmgw_replica_kv_events_missing)"},
		{p.Models[1].Replicas[0].HealthText, "breaker open"},
		{p.Models[2].Replicas[0].HealthText, "draining (maintenance)"},
		{p.Decisions[0].Reason, "exact mode, 48 of 64 prompt tokens predicted cached, total 1.500; prefix 0.750; beat a/2 (0.500) of 2 candidates"},
		{p.Decisions[1].Reason, "disaggregated mode, 0 of 64 prompt tokens predicted cached, total 1.000; the only candidate; prefilled on a/1, 32 of 64 prompt tokens predicted cached there"},
		{p.Decisions[2].Reason, "exact mode, 64 of 80 prompt tokens predicted cached, total 1.000; the only candidate; continues a stream whose replica a/1 failed mid-answer"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q; want %q", tc.got, tc.want)
		}
	}
	if r := modeReason(ReplicaState{Mode: "approx", KVEvents: true}, false); r != "KV ingest is off on this router (no kv_token)" {
		t.Errorf("ingest off: %q", r)
	}
	// A driver holds its state, but the router keys its model at another
	// block size: the set's reason, not "no driver session".
	why := "block size 16 differs from the 64 that m's prompts are keyed at"
	if r := modeReason(ReplicaState{Mode: "approx", KVEvents: true, Driver: "d", ApproxReason: why}, true); r != why {
		t.Errorf("approx for its block size: %q; want %q", r, why)
	}
}

// TestRenderEscapes: ids from Consul and drivers are data, never markup,
// in text and in attributes alike.
func TestRenderEscapes(t *testing.T) {
	t.Parallel()
	evil := `x"><script>alert(1)</script>`
	f := fleet{replicas: []ReplicaState{{ID: evil, Model: evil, Address: evil, Mode: evil, Healthy: true, Driver: evil}}}
	r := router{IngestOn: true, PeersOn: true, ID: evil, Peers: []PeerState{{ID: evil, LastSeen: now}},
		Drivers: []DriverSession{{Driver: evil, Live: true, Replicas: []string{evil}}}}
	var buf bytes.Buffer
	if err := Render(&buf, Build(now, 0, f, r, decisions{{Model: evil, Replica: evil, Mode: evil, Scores: []Score{{evil, 1}}}})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<script") || strings.Contains(out, `x">`) {
		t.Errorf("unescaped value in the page:\n%s", out)
	}
	if n := strings.Count(out, "x&#34;&gt;&lt;script&gt;"); n < 8 {
		t.Errorf("escaped value shown %d times; want it in every place (>= 8):\n%s", n, out)
	}
}

// TestRenderEmptyFleet: a router that knows no replica yet still renders
// a whole page that says so, with no auto-refresh unless asked.
func TestRenderEmptyFleet(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Render(&buf, Build(now, 0, fleet{}, router{}, decisions{})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`id="no-replicas"`, "No peer reports.", "No driver sessions.", "No routed requests yet.",
		"off (no kv_token)", "n/a (load sharing off)", "Generated 2026-12-01 12:00:00 UTC", "</html>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("empty page lacks %q", want)
		}
	}
	if strings.Contains(out, `http-equiv="refresh"`) {
		t.Error("meta refresh without ?refresh")
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	h := Handler(fleet{}, router{}, decisions{})
	for _, tc := range []struct {
		method, query string
		code          int
		want          string
	}{
		{"GET", "", 200, "<title>llmgw-router status</title>"},
		{"GET", "?refresh=5", 200, `<meta http-equiv="refresh" content="5">`},
		{"HEAD", "", 200, ""},
		{"GET", "?refresh=0", 400, "refresh: want whole seconds from 1 to 3600"},
		{"GET", "?refresh=3601", 400, "from 1 to 3600"},
		{"GET", "?refresh=1.5", 400, "whole seconds"},
		{"GET", "?refresh=%3Cb%3E", 400, "whole seconds"},
		{"POST", "", 405, "answers GET"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/admin/status"+tc.query, nil))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %q: %d %q; want %d containing %q", tc.method, tc.query, rec.Code, rec.Body.String(), tc.code, tc.want)
		}
		if tc.code == 200 {
			if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("content type %q", ct)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("CSP %q", csp)
			}
		}
		if tc.code == 400 && strings.Contains(rec.Body.String(), "<b>") {
			t.Errorf("error echoes markup: %q", rec.Body.String())
		}
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	inf := []Bucket{{0.001, 50}, {0.002, 90}, {0.004, 100}, {posInf, 100}}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []Bucket
		count   uint64
		want    time.Duration
	}{
		{"empty", 0.5, nil, 0, 0},
		{"median at the first bound", 0.5, inf, 100, time.Millisecond},
		{"within the second bucket", 0.7, inf, 100, 1500 * time.Microsecond},
		{"p99 in the third", 0.99, inf, 100, 3800 * time.Microsecond},
		{"in +Inf: the highest finite bound", 0.99, []Bucket{{0.001, 10}, {posInf, 100}}, 100, time.Millisecond},
	} {
		if got := Quantile(tc.q, tc.buckets, tc.count); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestRenderDriverStates: a live session shows its position; one the
// receiver dropped while the sink still holds its state awaits a snapshot.
func TestRenderDriverStates(t *testing.T) {
	t.Parallel()
	r := router{IngestOn: true, Drivers: []DriverSession{
		{Driver: "live-1", Live: true, Epoch: 7, Seq: 42, LastSeen: now.Add(-1500 * time.Millisecond), Replicas: []string{"a/1", "a/2"}},
		{Driver: "gone-1", Replicas: []string{"b/1"}},
	}}
	var buf bytes.Buffer
	if err := Render(&buf, Build(now, 0, fleet{}, r, decisions{})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`<tr><td>live-1</td><td><span class="mode-exact">in sync</span></td>`,
		`<td class="num">7</td><td class="num">42</td>`, "1.5s ago", "a/1, a/2",
		`<tr><td>gone-1</td><td><span class="warn">awaiting snapshot</span></td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestRenderRoles: the replica table shows each replica's role, and the
// decision log the prefill replica of a disaggregated decision ("none"
// for the others).
func TestRenderRoles(t *testing.T) {
	t.Parallel()
	f := fleet{replicas: []ReplicaState{
		{ID: "m/p", Model: "m", Mode: "exact", Role: "prefill", Healthy: true},
		{ID: "m/d", Model: "m", Mode: "exact", Role: "decode", Healthy: true},
		{ID: "m/a", Model: "m", Mode: "exact", Role: "agg", Healthy: true},
	}}
	d := decisions{
		{Model: "m", Replica: "m/d", Mode: "disaggregated", PromptTokens: 64, Prefill: "m/p", PrefillCachedTokens: 16},
		{Model: "m", Replica: "m/a", Mode: "exact"},
	}
	var buf bytes.Buffer
	if err := Render(&buf, Build(now, 0, f, router{IngestOn: true}, d)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`data-replica="m/p" data-mode="exact" data-role="prefill"`, `<td class="role">prefill</td>`,
		`data-replica="m/d" data-mode="exact" data-role="decode"`, `<td class="role">decode</td>`,
		`data-replica="m/a" data-mode="exact" data-role="agg"`, `<td class="role">agg</td>`,
		`<td>m/d</td><td class="prefill">m/p</td>`, "prefilled on m/p, 16 of 64 prompt tokens",
		`<td>m/a</td><td class="prefill"><span class="muted">none</span></td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestRenderScaleStates: a model the router scales from zero shows its
// state, and its waiters while it starts; other models show none.
func TestRenderScaleStates(t *testing.T) {
	t.Parallel()
	f := fleet{models: []ModelState{{Name: "cold-m", Scale: "cold"}, {Name: "starting-m", Scale: "starting", ColdWaiting: 3},
		{Name: "warm-m", Scale: "warm"}, {Name: "plain"}}}
	var buf bytes.Buffer
	if err := Render(&buf, Build(now, 0, f, router{}, decisions{})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`data-scale="cold">cold</b></li>`, `data-scale="starting">starting</b>, <b>3</b> waiting</li>`, `data-scale="warm">warm</b></li>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(out, "Scale from zero:"); n != 3 {
		t.Errorf("%d models show a scale state; want 3 (not the plain one)", n)
	}
}
