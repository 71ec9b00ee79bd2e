package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
)

// TestRunBenchUsage: bad flags and workloads exit 2 with a message, before
// any process starts.
func TestRunBenchUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown flag", []string{"-bogus"}, "usage: llmgw bench"},
		{"stray argument", []string{"extra"}, `unexpected arguments ["extra"]`},
		{"unknown policy", []string{"-policies", "round-robin,best"}, `unknown policy "best"`},
		{"doc without out", []string{"-doc", "x.md"}, "-doc needs -out"},
		{"no shards", []string{"-shards", "0"}, "-shards, -routers and -data-parallel-size must be >= 1"},
		{"no data-parallel rank", []string{"-data-parallel-size", "0"}, "-shards, -routers and -data-parallel-size must be >= 1"},
		{"no max model len", []string{"-max-model-len", "0"}, "-max-model-len must be >= 1, got 0"},
		{"unknown workload", []string{"-workload", "sharegpt"}, `unknown workload "sharegpt"`},
		{"trace without file", []string{"-workload", "trace"}, "needs -trace FILE"},
		{"missing trace", []string{"-workload", "trace", "-trace", "/nonexistent.jsonl"}, "/nonexistent.jsonl"},
		{"bad chat", []string{"-users", "0"}, "chat workload: need users"},
		{"bad fan-out", []string{"-workload", "fan-out", "-fanout-min", "9", "-fanout-max", "8"}, "fan-out workload: need"},
		{"falling rates", []string{"-rates", "4,2"}, "want them rising"},
		{"zero rate", []string{"-rates", "0,2"}, `rate "0": want a positive number`},
		{"quick without rates", []string{"-quick"}, "-quick needs -rates"},
		{"sized too large", []string{"-rates", "1,1000", "-duration", "1h"}, "asks for 3600000 requests; at most 100000"},
		{"noise out of range", []string{"-rates", "1,2", "-noise", "1"}, "-noise must be in [0, 1)"},
		{"no runs", []string{"-rates", "1,2", "-runs", "0"}, "-runs must be in [1, 20], got 0"},
		{"too many runs", []string{"-rates", "1,2", "-runs", "21"}, "-runs must be in [1, 20], got 21"},
		{"bad tenants", []string{"-workload", "mixed-tenants", "-tenant-share", "2"}, "mixed-tenant workload: need"},
		{"fault shard past the fleet", []string{"-fault-kill-after", "5s", "-shards", "2", "-fault-shard", "2"}, "-fault-shard 2: the fleet has shards 0..1"},
		{"negative fault shard", []string{"-fault-kill-after", "5s", "-fault-shard", "-1"}, "-fault-shard -1: the fleet has shards 0..3"},
		{"negative kill time", []string{"-fault-kill-after", "-5s"}, "-fault-kill-after -5s: must not be negative"},
		{"fault run with requests-out", []string{"-fault-kill-after", "5s", "-requests-out", "r.jsonl"}, "-requests-out is not written by a fault run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := runBench(context.Background(), tt.args, &stdout, &stderr); got != 2 {
				t.Errorf("exit code %d; want 2 (stderr %q)", got, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q; want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func TestBenchWorkloads(t *testing.T) {
	for _, args := range [][]string{
		{"-workload", "chat", "-users", "2", "-rounds", "2"},
		{"-workload", "prefix", "-groups", "2", "-per-group", "2"},
		{"-workload", "siblings", "-prompts", "2", "-samples", "3"},
		{"-workload", "trace", "-trace", filepath.Join("internal", "bench", "trace", "testdata", "sample.jsonl"), "-max-requests", "5"},
		{"-workload", "many-session", "-sessions", "3", "-rounds", "2"},
		{"-workload", "fan-out", "-bursts", "1", "-fanout-min", "4", "-fanout-max", "4"},
		{"-workload", "mixed-tenants", "-requests", "6"},
		{"-workload", "b2b-saas", "-b2b-groups", "1"},
		{"-workload", "coding-agent", "-agent-sessions", "1", "-agent-turns", "4", "-max-model-len", "32768"},
	} {
		c, err := parseBenchFlags(args, &bytes.Buffer{}, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		w, setup, err := c.buildWorkload()
		if err != nil || len(w.Requests) < 4 || setup == "" {
			t.Errorf("%v: %d requests, setup %q, %v", args, len(w.Requests), setup, err)
		}
	}
}

// TestWriteReport: -out gets the plots, report.json and report.md; -doc
// gets the section between its markers, linking the plots relative to it.
func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	docPath := filepath.Join(dir, "docs", "BENCHMARKS.md")
	if err := os.MkdirAll(filepath.Dir(docPath), 0o755); err != nil {
		t.Fatal(err)
	}
	begin, end := report.Markers("policies")
	if err := os.WriteFile(docPath, []byte("# Benchmarks\n"+begin+"\nold\n"+end+"\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := client.Result{Status: 200, Started: true, TTFT: 50 * time.Millisecond, E2E: 90 * time.Millisecond, PromptTokens: 64, CachedTokens: 48}
	rep := &report.Report{Command: "llmgw bench", Workload: "chat", Requests: 1, PromptTokens: 64, ReusableTokens: 48,
		Policies: []report.Summary{report.Summarize("precise-prefix", []client.Result{ok}, []int{48}, report.SLO{TTFT: time.Second, ITL: time.Second}, time.Second)}}
	c := benchConfig{outDir: filepath.Join(dir, "docs", "bench"), doc: docPath, section: "policies"}
	var stdout bytes.Buffer
	if err := writeReport(rep, c, &stdout); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "report.md", report.TTFTPlot, report.HitPlot} {
		if _, err := os.Stat(filepath.Join(c.outDir, f)); err != nil {
			t.Errorf("-out lacks %s: %v", f, err)
		}
	}
	doc, _ := os.ReadFile(docPath)
	for _, want := range []string{"| precise-prefix | 50.0 ms", "](bench/ttft-cdf.png)", "\ntail\n"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("doc lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(string(doc), "old") {
		t.Errorf("doc still holds the old section:\n%s", doc)
	}
	if !strings.Contains(stdout.String(), "](ttft-cdf.png)") {
		t.Errorf("stdout links plots beside report.md? got:\n%s", stdout.String())
	}
}
