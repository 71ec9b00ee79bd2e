package scalebench

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// smallConfig is a sweep small enough for a test: every axis has two
// points and one run samples briefly.
func smallConfig() Config {
	return Config{
		Replicas: []int{8, 96}, Blocks: []int{20_000, 60_000}, Tokens: []int{1 << 10, 32 << 10},
		Routers: []int{2, 4}, PeerReplicas: []int{64}, Snapshots: []int{8, 32},
		Discovery: []int{8, 32}, DiscoveryRouters: 2, DiscoveryWait: 100 * time.Millisecond,
		BaseReplicas: 8, BaseBlocks: 20_000, BaseTokens: 1 << 10,
		Prompts: 2, Runs: 2, RunTime: 20 * time.Millisecond, Seed: 1,
		PeerWindow: 200 * time.Millisecond, DiscoveryWindow: 300 * time.Millisecond,
	}
}

// TestRunSmall runs the small sweep once and checks its figures, then
// its report (checkReport).
func TestRunSmall(t *testing.T) {
	cfg := smallConfig()
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("report", func(t *testing.T) { checkReport(t, res) })
	if len(res.Replicas) != 2 || len(res.Blocks) != 2 || len(res.Tokens) != 2 || len(res.Peers) != 2 || len(res.Snapshots) != 2 || len(res.Discovery) != 2 {
		t.Fatalf("points per axis %d, %d, %d, %d, %d, %d; want 2 each", len(res.Replicas), len(res.Blocks), len(res.Tokens), len(res.Peers), len(res.Snapshots), len(res.Discovery))
	}
	for _, p := range append(append(res.Replicas, res.Blocks...), res.Tokens...) {
		if p.P50 <= 0 || p.P99 < p.P50 || p.Floor <= 0 || p.HeapPerBlock <= 0 || p.IngestPerCore <= 0 {
			t.Errorf("point %+v: every figure must be positive, p99 at least p50", p)
		}
		if p.Indexed < 1 || p.Indexed > p.Replicas {
			t.Errorf("point %+v: indexed replicas out of range", p)
		}
		if want := p.Tokens / blockSize; p.Tokens < 32<<10 && p.Probes != want {
			t.Errorf("point %+v: probes %d; want every block (%d) below the strided length", p, p.Probes, want)
		}
	}
	if long := res.Tokens[1]; long.Probes >= long.Tokens/blockSize {
		t.Errorf("32k-token prompt probes %d of %d blocks; want the strided walk's fewer", long.Probes, long.Tokens/blockSize)
	}
	for _, p := range res.Peers {
		// One router's pacing: a message per peer per 50 ms up to 5 peers.
		if want := float64(p.Routers-1) * 20; p.NominalPerSec != want {
			t.Errorf("%d routers: nominal %g messages/s per router; want %g", p.Routers, p.NominalPerSec, want)
		}
		if p.MsgsPerSec <= 0 || p.MsgBytes <= 0 || p.CPUPerMsgUS <= 0 || p.CorePct <= 0 || p.CoreMinPct > p.CorePct || p.CoreMaxPct < p.CorePct {
			t.Errorf("peer point %+v: every figure must be positive, the median within its range", p)
		}
		if p.SentPerRouter != p.NominalPerSec*float64(p.MsgBytes) || p.Fleet != p.SentPerRouter*float64(p.Routers) {
			t.Errorf("peer point %+v: bytes per second are not messages × bytes", p)
		}
	}
	for _, p := range res.Discovery {
		if p.ChecksPerSec <= 0 || p.CallsPerSec < p.ChecksPerSec || p.CallsMin > p.CallsPerSec || p.Routers != 2 {
			t.Errorf("discovery point %+v: want check reads, calls at least those, the median within its range, 2 routers", p)
		}
	}
}

// checkReport: the sweep's plots are PNG files, its CSV files parse, and
// its markdown section names every axis and lands between the markers.
func checkReport(t *testing.T, res *Results) {
	dir := t.TempDir()
	plots, err := res.Plots(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) != 7 {
		t.Errorf("plots %v; want 7", plots)
	}
	for _, p := range plots {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s is not a PNG file", p)
		}
	}
	var points, peers bytes.Buffer
	if err := res.WriteCSV(&points, &peers); err != nil {
		t.Fatal(err)
	}
	if rows, err := csv.NewReader(&points).ReadAll(); err != nil || len(rows) != 1+6 {
		t.Errorf("points.csv: %d rows, %v; want a header and 6 points", len(rows), err)
	}
	if rows, err := csv.NewReader(&peers).ReadAll(); err != nil || len(rows) != 1+2 {
		t.Errorf("peers.csv: %d rows, %v; want a header and 2 points", len(rows), err)
	}
	md := res.Markdown(Meta{Command: "make bench-scale", Label: "a test", PlotDir: "bench-scale"}, plots)
	for _, want := range []string{"#### Replicas", "#### Indexed blocks", "#### Prompt length", "#### Routers", "#### Nomad discovery", "Growth with replicas",
		"![decision-replicas](bench-scale/decision-replicas.png)", "over its floor"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	doc := "# Benchmarks\n\nbefore\n" + BeginMarker + "\nold\n" + EndMarker + "\nafter\n"
	got, err := Splice(doc, md)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "\nold\n") || !strings.HasPrefix(got, "# Benchmarks\n\nbefore\n") || !strings.HasSuffix(got, EndMarker+"\nafter\n") {
		t.Errorf("spliced document:\n%s", got)
	}
}

func TestSpliceNeedsMarkers(t *testing.T) {
	for _, doc := range []string{"no markers", BeginMarker + BeginMarker + EndMarker, EndMarker + "\n" + BeginMarker} {
		if _, err := Splice(doc, "x"); err == nil {
			t.Errorf("Splice(%q) succeeded; want an error naming the markers", doc)
		}
	}
}
