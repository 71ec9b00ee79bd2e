package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
)

// TestSweepSized: -duration sizes every workload to about rate x duration
// requests (bursts for fan-out and siblings).
func TestSweepSized(t *testing.T) {
	tests := []struct {
		args     []string
		min, max int // requests at 4 req/s x 5 s
	}{
		{[]string{"-workload", "mixed-tenants"}, 20, 20},
		{[]string{"-workload", "chat", "-rounds", "4"}, 20, 20},
		{[]string{"-workload", "many-session", "-rounds", "3"}, 21, 21},
		{[]string{"-workload", "prefix", "-per-group", "8"}, 24, 24},
		{[]string{"-workload", "trace", "-trace", filepath.Join("internal", "bench", "trace", "testdata", "toolagent-synth.jsonl")}, 20, 20},
		{[]string{"-workload", "fan-out", "-fanout-min", "2", "-fanout-max", "2"}, 40, 40}, // 20 bursts of 2
		{[]string{"-workload", "siblings", "-samples", "3"}, 60, 60},                       // 20 prompts x 3
		{[]string{"-workload", "b2b-saas"}, 20, 20},                                        // 4 groups x 5
		{[]string{"-workload", "coding-agent", "-agent-turns", "1"}, 20, 20},               // 20 sessions of one turn
	}
	for _, tt := range tests {
		c, err := parseBenchFlags(append(tt.args, "-rates", "4", "-duration", "5s"), &bytes.Buffer{}, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		c.rate = 4
		c.sized(4 * c.sweep.duration.Seconds())
		w, _, err := c.buildWorkload()
		if err != nil || len(w.Requests) < tt.min || len(w.Requests) > tt.max {
			t.Errorf("%v: %d requests, %v; want %d to %d", tt.args, len(w.Requests), err, tt.min, tt.max)
		}
	}
}

// TestRenderSweep: a sweep written with -out and -doc renders again from
// its sweep.json into the same section.
func TestRenderSweep(t *testing.T) {
	dir := t.TempDir()
	docPath := filepath.Join(dir, "BENCHMARKS.md")
	begin, end := report.Markers("sweep-x")
	if err := os.WriteFile(docPath, []byte("# B\n"+begin+"\nold\n"+end+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	slo := report.SLO{TTFT: time.Second, ITL: 50 * time.Millisecond}
	at := func(rate, rr, def float64) report.Report {
		return report.Report{Workload: "x", Rate: rate, Requests: 10, Policies: []report.Summary{
			{Policy: "round-robin", Goodput: rr, Requests: 10}, {Policy: "precise-prefix", Goodput: def, Requests: 10}, {Policy: "dynamo", Goodput: 1, Requests: 10}}}
	}
	s := &report.Sweep{Command: "llmgw bench -rates 1,2", Workload: "x", SLO: slo, Baseline: "round-robin", Default: "precise-prefix",
		Rates: []report.Report{at(1, 1, 1), at(2, 1.5, 2)}}
	out := filepath.Join(dir, "bench", "sweep-x")
	c := benchConfig{outDir: out, doc: docPath, section: "sweep-x"}
	if err := writeSweep(s, c, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.json", "sweep.md", report.SweepPlot} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("-out lacks %s: %v", f, err)
		}
	}
	if err := os.WriteFile(docPath, []byte("# B\n"+begin+"\nold\n"+end+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.sweep.render, c.sweep.noise = filepath.Join(out, "sweep.json"), 0.05
	var stdout bytes.Buffer
	if err := renderSweep(c, &stdout); err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile(docPath)
	// The doc's section has one table per workload and links the rest.
	for _, want := range []string{"| precise-prefix | below the lowest rate | 1.00 | 2.00 |", "](bench/sweep-x/sweep.png)",
		"[sweep.md](bench/sweep-x/sweep.md)", "more than 5% higher"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("rendered doc lacks %q:\n%s", want, doc)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(out, "sweep.md")); !strings.Contains(string(md), "| 2 | precise-prefix |") {
		t.Errorf("sweep.md lacks the per-rate table:\n%s", md)
	}
	if strings.Contains(string(doc), "old") || strings.Contains(string(doc), "| 2 | precise-prefix |") {
		t.Errorf("the section was not replaced, or holds the per-rate table:\n%s", doc)
	}
	// The same sweep twice: the second is a repeat of the first.
	c.sweep.render = filepath.Join(out, "sweep.json") + "," + filepath.Join(out, "sweep.json")
	if err := renderSweep(c, &stdout); err != nil {
		t.Fatal(err)
	}
	if doc, _ := os.ReadFile(docPath); !strings.Contains(string(doc), "2 runs (seeds not recorded); the figures are their medians.") {
		t.Errorf("rendering two sweeps: no medians over 2 runs:\n%s", doc)
	}
	c.sweep.render = filepath.Join(dir, "missing.json")
	if err := renderSweep(c, &stdout); err == nil {
		t.Error("rendering a missing file: no error")
	}
}

// TestRunSweepsKeepsCompletedRuns: when a run of a multi-run sweep fails
// (here the third, cut short by its deadline), the completed runs are
// written to -out, seeds and all, where -render reads them; without -out,
// or when the first run fails, the error says nothing was kept.
func TestRunSweepsKeepsCompletedRuns(t *testing.T) {
	sweepOf := func(goodput float64) *report.Sweep {
		return &report.Sweep{Command: "llmgw bench -rates 1", Workload: "x", Baseline: "round-robin", Default: "precise-prefix",
			Rates: []report.Report{{Workload: "x", Rate: 1, Requests: 10, Policies: []report.Summary{
				{Policy: "round-robin", Goodput: 1, Requests: 10}, {Policy: "precise-prefix", Goodput: goodput, Requests: 10}}}}}
	}
	failAt := func(n int) func(int) (*report.Sweep, error) {
		return func(run int) (*report.Sweep, error) {
			if run == n {
				return nil, context.DeadlineExceeded
			}
			return sweepOf(float64(run + 2)), nil
		}
	}
	out := filepath.Join(t.TempDir(), "sweep-x")
	c := benchConfig{seed: 5, outDir: out}
	c.sweep.runs = 3

	_, err := c.runSweeps(failAt(2))
	path := filepath.Join(out, partialSweep)
	if !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "run 3 of 3 (seed 7)") || !strings.Contains(err.Error(), "2 completed runs kept in "+path) {
		t.Fatalf("error %v; want the third run's deadline and where the two completed runs are", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept report.Sweep
	if err := json.Unmarshal(b, &kept); err != nil {
		t.Fatal(err)
	}
	if kept.Seed != 5 || len(kept.Repeats) != 1 || kept.Repeats[0].Seed != 6 || kept.Repeats[0].Rates[0].Policies[1].Goodput != 3 {
		t.Errorf("kept seed %d with %d repeats; want seed 5 and its repeat on seed 6 (goodput 3)", kept.Seed, len(kept.Repeats))
	}
	c.sweep.render = path
	var md bytes.Buffer
	if err := renderSweep(benchConfig{sweep: c.sweep}, &md); err != nil || !strings.Contains(md.String(), "2 runs, the workload seeded 5, 6") {
		t.Errorf("rendering the kept runs: %v\n%s", err, md.String())
	}
	// A later sweep that completes in the same -out drops it.
	if err := c.dropPartial(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s is left after a complete sweep: %v", path, err)
	}
	if err := c.dropPartial(); err != nil {
		t.Errorf("no partial runs to drop: %v", err)
	}

	if _, err := (&benchConfig{seed: 5, sweep: c.sweep}).runSweeps(failAt(1)); err == nil || !strings.Contains(err.Error(), "1 completed run not kept (no -out)") {
		t.Errorf("without -out: %v", err)
	}
	first := benchConfig{outDir: t.TempDir(), sweep: c.sweep}
	if _, err := first.runSweeps(failAt(0)); err == nil || strings.Contains(err.Error(), "completed") {
		t.Errorf("the first run failing: %v; want no word of completed runs", err)
	}
	if _, err := os.Stat(filepath.Join(first.outDir, partialSweep)); !os.IsNotExist(err) {
		t.Errorf("the first run failing left %s: %v", partialSweep, err)
	}
}
