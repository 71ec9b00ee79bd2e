package scalebench

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/llmgw/llmgw/router/index"
)

// SnapshotPoint is what applying a whole fleet's snapshots to one model's
// index costs: Index.Replace for each of Replicas replicas, each holding
// snapshotOwn keys of its own and the first snapshotShared keys of a
// prompt they all share. Join fills an empty index (a router starting);
// Resync applies the next snapshot of every replica to an index holding
// the fleet, half of each replica's own keys new. Figures are ms per
// whole snapshot, the median of the runs with their range. At
// index.MaxHolders replicas every slot is taken and resync's Replace
// works in place, finding each replica's stale keys among its slot's
// candidates (router/index/inplace.go).
type SnapshotPoint struct {
	Replicas     int     `json:"replicas"`
	JoinMS       float64 `json:"join_ms"`
	JoinMinMS    float64 `json:"join_min_ms"`
	JoinMaxMS    float64 `json:"join_max_ms"`
	ResyncMS     float64 `json:"resync_ms,omitempty"`
	ResyncMinMS  float64 `json:"resync_min_ms,omitempty"`
	ResyncMaxMS  float64 `json:"resync_max_ms,omitempty"`
	JoinPerRepUS float64 `json:"join_us_per_replica"`
}

// The shape of one replica's snapshot in the snapshot sweep.
const (
	snapshotOwn    = 256
	snapshotShared = 64
)

// fleetSnapshots is every replica's snapshot of generation gen.
func fleetSnapshots(n, gen int) [][]index.Blocks {
	shared := make([]uint64, snapshotShared)
	for j := range shared {
		shared[j] = uint64(0xfeed)<<40 | uint64(j) + 1
	}
	out := make([][]index.Blocks, n)
	for i := range out {
		keys := make([]uint64, 0, snapshotOwn+snapshotShared)
		for j := range snapshotOwn {
			keys = append(keys, uint64(i)<<32|uint64(gen*snapshotOwn/2+j)+1)
		}
		out[i] = []index.Blocks{{Tier: index.GPU, Keys: append(keys, shared...)}}
	}
	return out
}

// applyFleet replaces every replica's state with snaps and returns the
// wall-clock time it took.
func applyFleet(ix *index.Index, snaps [][]index.Blocks) (time.Duration, error) {
	start := time.Now()
	for i, s := range snaps {
		if err := ix.Replace(replicaID(i), s); err != nil {
			return 0, fmt.Errorf("snapshot of replica %d: %w", i, err)
		}
	}
	return time.Since(start), nil
}

// snapshotPoint measures one fleet size, runs times.
func snapshotPoint(n, runs int) (SnapshotPoint, error) {
	gens := [2][][]index.Blocks{fleetSnapshots(n, 0), fleetSnapshots(n, 1)}
	var join, resync []float64
	for range runs {
		runtime.GC()
		ix := index.New(index.Options{})
		d, err := applyFleet(ix, gens[0])
		if err != nil {
			return SnapshotPoint{}, err
		}
		join = append(join, float64(d)/1e6)
		if d, err = applyFleet(ix, gens[1]); err != nil {
			return SnapshotPoint{}, err
		}
		resync = append(resync, float64(d)/1e6)
	}
	p := SnapshotPoint{Replicas: n, JoinMS: median(join), JoinMinMS: slices.Min(join), JoinMaxMS: slices.Max(join)}
	p.JoinPerRepUS = p.JoinMS * 1e3 / float64(n)
	p.ResyncMS, p.ResyncMinMS, p.ResyncMaxMS = median(resync), slices.Min(resync), slices.Max(resync)
	return p, nil
}

// SnapshotSweep measures snapshot apply at each fleet size of
// cfg.Snapshots, each figure the median of cfg.Runs runs.
func SnapshotSweep(cfg Config) ([]SnapshotPoint, error) {
	if cfg.Runs < 1 {
		return nil, fmt.Errorf("snapshot sweep: runs %d must be positive", cfg.Runs)
	}
	var out []SnapshotPoint
	for _, n := range cfg.Snapshots {
		p, err := snapshotPoint(n, cfg.Runs)
		if err != nil {
			return nil, fmt.Errorf("snapshot apply at %d replicas: %w", n, err)
		}
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "snapshot apply: replicas %5d: join %8.2f ms [%.2f-%.2f] (%6.1f µs/replica) resync %8.2f ms [%.2f-%.2f]\n",
				n, p.JoinMS, p.JoinMinMS, p.JoinMaxMS, p.JoinPerRepUS, p.ResyncMS, p.ResyncMinMS, p.ResyncMaxMS)
		}
		out = append(out, p)
	}
	return out, nil
}

// SnapshotGrowth is the growth of a whole snapshot's apply time against
// replicas, for join and (where measured) resync.
func SnapshotGrowth(ps []SnapshotPoint) (join, resync Growth) {
	var x, j, rx, r []float64
	for _, p := range ps {
		x, j = append(x, float64(p.Replicas)), append(j, p.JoinMS)
		if p.ResyncMS > 0 {
			rx, r = append(rx, float64(p.Replicas)), append(r, p.ResyncMS)
		}
	}
	return growthOf(x, j), growthOf(rx, r)
}

// WriteSnapshots prints the snapshot sweep as a table with its growth.
func WriteSnapshots(w io.Writer, ps []SnapshotPoint) {
	fmt.Fprintf(w, "| replicas | join ms (range) | µs per replica | resync ms (range) |\n|---|---|---|---|\n")
	for _, p := range ps {
		fmt.Fprintf(w, "| %s | %.2f (%.2f-%.2f) | %.1f | %.2f (%.2f-%.2f) |\n", thousands(p.Replicas), p.JoinMS, p.JoinMinMS, p.JoinMaxMS,
			p.JoinPerRepUS, p.ResyncMS, p.ResyncMinMS, p.ResyncMaxMS)
	}
	join, resync := SnapshotGrowth(ps)
	fmt.Fprintf(w, "\nSnapshot apply against replicas: join %s, resync %s.\n", join, resync)
	j, jok := TargetSlope(ps, false)
	r, rok := TargetSlope(ps, true)
	if jok && rok {
		fmt.Fprintf(w, "Log-log slopes over 256, 1,024 and 4,096 replicas (the target: at most 1.1): join %.2f, resync %.2f.\n", j, r)
	}
}

// TargetSlope is the log-log slope of join's (or resync's) whole-snapshot
// time over the 256, 1,024 and 4,096 replica points, the figure the
// design is held to (at most 1.1: linear); ok is false unless all three
// were measured.
func TargetSlope(ps []SnapshotPoint, resync bool) (slope float64, ok bool) {
	var x, y []float64
	for _, p := range ps {
		ms := p.JoinMS
		if resync {
			ms = p.ResyncMS
		}
		if (p.Replicas == 256 || p.Replicas == 1024 || p.Replicas == 4096) && ms > 0 {
			x, y = append(x, float64(p.Replicas)), append(y, ms)
		}
	}
	if len(x) != 3 {
		return 0, false
	}
	return growthOf(x, y).Slope, true
}
