package scalebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Config is the sweep: the values of each axis (the others held at the
// Base values), how many runs each figure is the median of, and how long
// each run samples.
type Config struct {
	Replicas     []int // replicas axis
	Blocks       []int // indexed blocks axis
	Tokens       []int // prompt length axis
	Routers      []int // routers axis of peer sharing (2 and up)
	PeerReplicas []int // replicas per peer message, one curve each
	Snapshots    []int // replicas axis of snapshot apply
	Discovery    []int // replicas axis of Nomad discovery's calls
	// DiscoveryRouters is how many routers watch the replicas' service;
	// DiscoveryWait their blocking wait (nomad.WatchOptions.WaitTime, 0:
	// the default), which a test shortens.
	DiscoveryRouters int
	DiscoveryWait    time.Duration
	// Base is (replicas, blocks, tokens) where the other axes are held.
	BaseReplicas, BaseBlocks, BaseTokens int
	// Prompts is how many prompts the decision takes in turn.
	Prompts int
	Runs    int
	RunTime time.Duration
	// PeerWindow and DiscoveryWindow are how long one run of peer sharing
	// and of discovery counts: both run in real time, at the pacing of
	// router/peers' publishers and of nomad's watchers.
	PeerWindow, DiscoveryWindow time.Duration
	Seed                        uint64
	// Log, when set, gets a line per point as the sweep goes.
	Log io.Writer `json:"-"`
}

// DefaultConfig is `make bench-scale`'s sweep: about ten minutes on a
// shared 2-core machine (discovery's windows are most of it), about
// 1.5 GB of memory at its 10M-block point.
func DefaultConfig() Config {
	return Config{
		Replicas:     []int{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096},
		Blocks:       []int{100_000, 300_000, 1_000_000, 3_000_000, 10_000_000},
		Tokens:       []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10},
		Routers:      []int{2, 4, 8, 16, 32},
		PeerReplicas: []int{64, 1024, 4096},
		Snapshots:    []int{64, 128, 256, 512, 1024, 2048, 4096},
		Discovery:    []int{64, 256, 1024, 4096}, DiscoveryRouters: 8,
		BaseReplicas: 64, BaseBlocks: 1_000_000, BaseTokens: 8 << 10,
		Prompts: 64, Runs: 5, RunTime: 300 * time.Millisecond, Seed: 1,
		PeerWindow: 2 * time.Second, DiscoveryWindow: 15 * time.Second,
	}
}

// Results is one sweep's figures, each axis's points in order.
type Results struct {
	Config   Config      `json:"config"`
	Machine  Machine     `json:"machine"`
	Replicas []Point     `json:"replicas"`
	Blocks   []Point     `json:"blocks"`
	Tokens   []Point     `json:"tokens"`
	Peers    []PeerPoint `json:"peers"`
	// Snapshots is snapshot apply against replicas (SnapshotSweep).
	Snapshots []SnapshotPoint `json:"snapshots"`
	// Discovery is Nomad discovery's calls against replicas
	// (DiscoverySweep).
	Discovery []DiscoveryPoint `json:"discovery"`
	Took      float64          `json:"took_s"`
	// Label says where the sweep ran (bench-scale -label); the report
	// names it rather than a later run's.
	Label string `json:"label,omitempty"`
	// Rerun, when set, says which parts a later `bench-scale -only` run
	// measured again, and where: the rest is the first run's.
	Rerun *Rerun `json:"rerun,omitempty"`
}

// Machine describes where the sweep ran.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	Go         string `json:"go"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	Date       string `json:"date"`
}

// Run sweeps cfg's axes. A point shared by several axes (the base) is
// measured once.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if cfg.Runs < 1 || cfg.RunTime <= 0 || cfg.Prompts < 1 {
		return nil, fmt.Errorf("sweep: runs %d, run time %v and prompts %d must be positive", cfg.Runs, cfg.RunTime, cfg.Prompts)
	}
	start := time.Now()
	res := &Results{Config: cfg, Machine: Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(),
		LoadBefore: loadAvg(), Date: start.UTC().Format("2006-01-02 15:04 UTC")}}
	done := map[[3]int]Point{}
	point := func(r, b, t int) (Point, error) {
		k := [3]int{r, b, t}
		if p, ok := done[k]; ok {
			return p, nil
		}
		p, err := measurePoint(ctx, cfg, r, b, t)
		if err != nil {
			return Point{}, err
		}
		done[k] = p
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "replicas %5d (indexed %4d) blocks %9d tokens %6d: p50 %8.1f µs p99 %8.1f µs (cpu %6.1f/%6.1f, warm %6.1f/%6.1f) floor %7.1f µs ratio %5.2f MLP %5.2f  %5.1f B/block  ingest %.2f M events/cpu-s\n",
				r, p.Indexed, b, t, p.P50, p.P99, p.CPUP50, p.CPUP99, p.WarmP50, p.WarmP99, p.Floor, p.Ratio, p.GatherRatio, p.HeapPerBlock, p.IngestPerCore/1e6)
		}
		return p, nil
	}
	axes := []struct {
		vals []int
		out  *[]Point
		at   func(v int) (int, int, int)
	}{
		{cfg.Replicas, &res.Replicas, func(v int) (int, int, int) { return v, cfg.BaseBlocks, cfg.BaseTokens }},
		{cfg.Blocks, &res.Blocks, func(v int) (int, int, int) { return cfg.BaseReplicas, v, cfg.BaseTokens }},
		{cfg.Tokens, &res.Tokens, func(v int) (int, int, int) { return cfg.BaseReplicas, cfg.BaseBlocks, v }},
	}
	for _, ax := range axes {
		for _, v := range ax.vals {
			p, err := point(ax.at(v))
			if err != nil {
				return nil, err
			}
			*ax.out = append(*ax.out, p)
		}
	}
	for _, part := range Parts {
		if err := res.RunPart(ctx, part); err != nil {
			return nil, err
		}
	}
	res.Machine.LoadAfter = loadAvg()
	res.Took = time.Since(start).Seconds()
	return res, nil
}

// cpuModel is /proc/cpuinfo's first model name, or "unknown".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// loadAvg is /proc/loadavg's three load averages, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
