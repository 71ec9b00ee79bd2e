package bench_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

// TestDataParallelPinning runs the comparison `make bench-dp-pinning`
// makes, small: one replica of four data-parallel ranks (the driver's
// data_parallel_size, one KV event stream a rank), shared-prefix groups
// interleaved at random (a chat workload's rounds come round in a cycle
// that the engine's rotating rank choice can follow by chance), and
// precise-prefix against precise-prefix-unpinned on that fleet. Both runs
// must spread the replica's requests over its ranks (the engine's own
// per-rank request counters), or there is nothing to pin; and the pinned
// run must report a higher share of requests whose predicted cached
// tokens equal the engine's reported ones than the unpinned run, where
// the engine picks each request's rank by load.
func TestDataParallelPinning(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, a data-parallel vllm-sim shard and a router")
	}
	bin := bins.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	work := t.TempDir()
	const ranks = 4
	f, err := fleet.Start(ctx, fleet.Options{BinDir: bin, Shards: 1, Routers: 1, WorkDir: work, DataParallelSize: ranks})
	if err != nil {
		t.Fatal(err)
	}
	defer fleettest.CheckNone(t, work)
	defer f.Close()
	w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 4, PerGroup: 6, PrefixTokens: 400, SuffixTokens: 30, OutputTokens: 8, Rate: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	shares := map[string]float64{}
	for _, name := range []string{"precise-prefix", "precise-prefix-unpinned"} {
		ps, err := bench.SelectPolicies(name)
		if err != nil {
			t.Fatal(err)
		}
		before := rankRequests(t, f.EngineURLs()[0], ranks)
		rep, err := bench.Run(ctx, f, bench.Options{Workload: w, Policies: ps, Model: "sim-model", BlockSize: 16,
			SLO: report.SLO{TTFT: time.Second, ITL: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		after := rankRequests(t, f.EngineURLs()[0], ranks)
		s := rep.Policies[0]
		served := 0
		for i := range after {
			after[i] -= before[i]
			if after[i] > 0 {
				served++
			}
		}
		t.Logf("%s: %d ok, predicted = reported on %d (%.0f%%, cached from %s), per rank %v", name, s.OK, s.PredictedExact, 100*s.PredictedExactShare, s.CachedFrom, after)
		if s.OK != len(w.Requests) || s.CachedFrom != "usage" {
			t.Fatalf("%s: %d of %d requests completed, cached tokens from %q; want all, from usage", name, s.OK, len(w.Requests), s.CachedFrom)
		}
		if served < 2 {
			t.Errorf("%s: the replica served its requests on %d of its %d ranks (%v); want them spread", name, served, ranks, after)
		}
		shares[name] = s.PredictedExactShare
	}
	if shares["precise-prefix"] <= shares["precise-prefix-unpinned"] {
		t.Errorf("predicted = reported on %.0f%% pinned, %.0f%% unpinned; want pinning ahead",
			100*shares["precise-prefix"], 100*shares["precise-prefix-unpinned"])
	}
}

// rankRequests reads vllm:request_success_total per data-parallel rank
// (its engine label) from the engine's /metrics.
func rankRequests(t *testing.T, engine string, ranks int) []float64 {
	t.Helper()
	resp, err := http.Get(engine + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := make([]float64, ranks)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "vllm:request_success_total{")
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(line, `engine="`)
		rank, rest, _ := strings.Cut(rest, `"`)
		i, err := strconv.Atoi(rank)
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if err != nil || i < 0 || i >= ranks || len(f) == 0 {
			t.Fatalf("metrics line %q: want an engine label below %d and a value", sc.Text(), ranks)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		out[i] += v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
