package scalebench

import (
	"context"
	"os"
	"testing"
	"time"
)

// smallConfig is a sweep small enough for a test: every axis has two
// points and one run samples briefly.
func smallConfig() Config {
	return Config{
		Replicas: []int{8, 96}, Blocks: []int{20_000, 60_000}, Tokens: []int{1 << 10, 32 << 10},
		Routers: []int{1, 4}, PeerReplicas: []int{64},
		BaseReplicas: 8, BaseBlocks: 20_000, BaseTokens: 1 << 10,
		Prompts: 4, Runs: 2, RunTime: 20 * time.Millisecond, Seed: 1,
	}
}

func TestRunSmall(t *testing.T) {
	cfg := smallConfig()
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replicas) != 2 || len(res.Blocks) != 2 || len(res.Tokens) != 2 || len(res.Peers) != 2 {
		t.Fatalf("points per axis %d, %d, %d, %d; want 2 each", len(res.Replicas), len(res.Blocks), len(res.Tokens), len(res.Peers))
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
	if p := res.Peers[0]; p.SentPerRouter != 0 {
		t.Errorf("a lone router sends %g B/s; want 0", p.SentPerRouter)
	}
	if p := res.Peers[1]; p.SentPerRouter != 3*20*float64(p.MsgBytes) {
		t.Errorf("4 routers: %g B/s per router; want 3 peers × 20 messages/s × %d B", p.SentPerRouter, p.MsgBytes)
	}
}
