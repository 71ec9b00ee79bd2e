package scalebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
)

// Point is one fleet's figures, each the median over the runs.
type Point struct {
	Replicas int `json:"replicas"`
	Blocks   int `json:"blocks"` // asked for
	Tokens   int `json:"tokens"`
	// Indexed is how many replicas' state the index accepted; Keys how
	// many keys it holds.
	Indexed int `json:"indexed"`
	Keys    int `json:"keys"`
	// Probes is how many index slots the walk reads for the prompt.
	Probes int `json:"probes"`
	// HeapPerBlock is the router state's heap per indexed key after GC.
	HeapPerBlock float64 `json:"heap_per_block"`
	// Decision p50 and p99 (µs) over the prompts in turn (each one's index
	// slots last read Config.Prompts-1 decisions ago), WarmP50 and WarmP99
	// over one prompt repeated (its slots in the core's caches), the
	// floor's parts and the ratio of the decision's p50 to the floor,
	// medians of the runs' figures.
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
	// CPUP50 and CPUP99 are the same decisions' thread CPU time (µs): on
	// a shared machine, without the time spent waiting for a core.
	CPUP50  float64 `json:"cpu_p50_us"`
	CPUP99  float64 `json:"cpu_p99_us"`
	WarmP50 float64 `json:"warm_p50_us"`
	WarmP99 float64 `json:"warm_p99_us"`
	Hash    float64 `json:"hash_us"`
	Chase   float64 `json:"chase_us"`
	Floor   float64 `json:"floor_us"`
	Ratio   float64 `json:"ratio"`
	// Gather is the same number of loads independent of each other (µs),
	// the floor of a walk that overlaps its misses; GatherRatio the
	// decision's p50 over the hash plus Gather.
	Gather      float64 `json:"gather_us"`
	GatherRatio float64 `json:"gather_ratio"`
	// RatioRange is the runs' lowest and highest ratio.
	RatioRange [2]float64 `json:"ratio_range"`
	// IngestPerCore is block events decoded and applied per CPU-second;
	// IngestRefused the share of replica updates the index refused.
	IngestPerCore float64 `json:"ingest_events_per_cpu_s"`
	IngestRefused float64 `json:"ingest_refused"`
	Runs          int     `json:"runs"`
}

// measurePoint builds the fleet and measures it.
func measurePoint(ctx context.Context, cfg Config, replicas, blocks, tokens int) (Point, error) {
	f, err := newFleet(replicas, blocks, tokens, cfg.Prompts, cfg.Seed)
	if err != nil {
		return Point{}, err
	}
	p := Point{Replicas: replicas, Blocks: blocks, Tokens: tokens, Indexed: f.indexed, Keys: f.keys,
		Probes: f.probes(), HeapPerBlock: f.heapPerBlock, Runs: cfg.Runs}
	ch := newChase(f.heapBytes, cfg.Seed)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := newDecider(f)
	var cpu50s, cpu99s []float64
	var p50s, p99s, warm50s, warm99s, hashes, chases, floors, ratios, gathers, gratios, ingests, refused []float64
	for range cfg.Runs {
		if err := ctx.Err(); err != nil {
			return Point{}, err
		}
		lat, cpu, err := decisions(ctx, d, len(f.prompts), cfg.RunTime)
		if err != nil {
			return Point{}, fmt.Errorf("%d replicas, %d blocks, %d tokens: %w", replicas, blocks, tokens, err)
		}
		cpu50s, cpu99s = append(cpu50s, quantile(cpu, 0.5)), append(cpu99s, quantile(cpu, 0.99))
		warm, _, err := decisions(ctx, d, 1, cfg.RunTime/2)
		if err != nil {
			return Point{}, fmt.Errorf("%d replicas, %d blocks, %d tokens: %w", replicas, blocks, tokens, err)
		}
		warm50s, warm99s = append(warm50s, quantile(warm, 0.5)), append(warm99s, quantile(warm, 0.99))
		h, c, g := floorParts(f, ch, min(len(lat), 1000), p.Probes, cfg.Seed)
		p50 := quantile(lat, 0.5)
		gathers, gratios = append(gathers, g), append(gratios, p50/(h+g))
		p50s, p99s = append(p50s, p50), append(p99s, quantile(lat, 0.99))
		hashes, chases = append(hashes, h), append(chases, c)
		floors, ratios = append(floors, h+c), append(ratios, p50/(h+c))
		ev, ref, err := ingestRate(f, cfg.RunTime/2, cfg.Seed)
		if err != nil {
			return Point{}, err
		}
		ingests, refused = append(ingests, ev), append(refused, ref)
	}
	p.P50, p.P99 = median(p50s), median(p99s)
	p.WarmP50, p.WarmP99 = median(warm50s), median(warm99s)
	p.CPUP50, p.CPUP99 = median(cpu50s), median(cpu99s)
	p.Hash, p.Chase, p.Floor, p.Ratio = median(hashes), median(chases), median(floors), median(ratios)
	p.Gather, p.GatherRatio = median(gathers), median(gratios)
	p.RatioRange = [2]float64{quantile(ratios, 0), quantile(ratios, 1)}
	p.IngestPerCore, p.IngestRefused = median(ingests), median(refused)
	runtime.KeepAlive(ch)
	return p, nil
}

// decisions times single decisions over the first prompts prompts in
// turn for about budget (at least 50, at most 5,000) and returns their
// latencies and thread CPU times in µs.
func decisions(ctx context.Context, d *decider, prompts int, budget time.Duration) (lat, cpu []float64, err error) {
	lat = make([]float64, 0, 5000)
	cpu = make([]float64, 0, 5000)
	end := time.Now().Add(budget)
	for len(lat) < 50 || (len(lat) < cap(lat) && time.Now().Before(end)) {
		c0, err := threadCPU()
		if err != nil {
			return nil, nil, err
		}
		start := time.Now()
		if err := d.decide(ctx, len(lat)%prompts); err != nil {
			return nil, nil, err
		}
		lat = append(lat, float64(time.Since(start).Nanoseconds())/1e3)
		c1, err := threadCPU()
		if err != nil {
			return nil, nil, err
		}
		cpu = append(cpu, float64(c1-c0)/1e3)
	}
	return lat, cpu, nil
}

// floorParts returns the median time (µs) of hashing the fleet's prompt,
// of probes dependent loads over the chase, and of probes independent
// ones (fresh random lines each sample), n samples each, alternated.
func floorParts(f *fleet, ch *chase, n, probes int, seed uint64) (hash, load, gather float64) {
	hs := make([]float64, 0, n)
	ls := make([]float64, 0, n)
	gs := make([]float64, 0, n)
	at := ch.randomNodes(probes*64, rand.New(rand.NewPCG(seed, 6)))
	keys := hashPrompt(nil, f.prompts[0])
	var sink uint32
	for i := range n {
		t0 := time.Now()
		keys = hashPrompt(keys, f.prompts[i%len(f.prompts)])
		t1 := time.Now()
		sink += ch.walk(probes)
		t2 := time.Now()
		off := (i % 64) * probes
		sink += ch.gather(at[off : off+probes])
		t3 := time.Now()
		hs = append(hs, float64(t1.Sub(t0).Nanoseconds())/1e3)
		ls = append(ls, float64(t2.Sub(t1).Nanoseconds())/1e3)
		gs = append(gs, float64(t3.Sub(t2).Nanoseconds())/1e3)
	}
	runtime.KeepAlive(sink)
	return quantile(hs, 0.5), quantile(ls, 0.5), quantile(gs, 0.5)
}

// ingestBatch is one replica's change per update: 8 blocks stored and the
// 8 stored an update before removed, as a busy engine's churn.
const ingestBatch = 8

// ingestRate decodes and applies delta updates (kvwire.Decode, then the ingest
// Sink, as the endpoint does after HTTP and its sequence check) for about
// budget of this thread's CPU time. Each update is one driver's 8 shards,
// taken in turn over all replicas. It returns block events per
// CPU-second and the share of replica updates refused (for lack of room,
// as the ingest answers the driver, or for an error).
func ingestRate(f *fleet, budget time.Duration, seed uint64) (perCore, refused float64, err error) {
	rng := rand.New(rand.NewPCG(seed, 4))
	live := make([][]uint64, len(f.ids)) // each replica's blocks added last
	const perUpdate = 8
	var cpu int64
	events, groups, refusedN := 0, 0, 0
	errs0 := f.sink.Stats().Errors
	next := 0
	for seq := uint64(1); cpu < budget.Nanoseconds() || seq < 4; seq++ {
		u := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Seq: seq + 1}
		n := 0
		for range min(perUpdate, len(f.ids)) {
			r := next
			next = (next + 1) % len(f.ids)
			add := make([]uint64, ingestBatch)
			for i := range add {
				add[i] = rng.Uint64()
			}
			u.Replicas = append(u.Replicas, kvwire.Replica{ID: f.ids[r], Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add, Del: live[r]}}})
			n += len(add) + len(live[r])
			live[r] = add
		}
		body, err := kvwire.Encode(u)
		if err != nil {
			return 0, 0, fmt.Errorf("encode an ingest update: %w", err)
		}
		c0, err := threadCPU()
		if err != nil {
			return 0, 0, err
		}
		got, err := kvwire.Decode(body)
		if err != nil {
			return 0, 0, fmt.Errorf("decode an ingest update: %w", err)
		}
		refusedN += len(f.sink.ApplyRefusing(got))
		c1, err := threadCPU()
		if err != nil {
			return 0, 0, err
		}
		cpu += c1 - c0
		events += n
		groups += len(u.Replicas)
	}
	// Take the churn's blocks out again so the next run starts from the
	// fleet as built.
	u := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1}
	for r, ks := range live {
		if len(ks) > 0 {
			u.Replicas = append(u.Replicas, kvwire.Replica{ID: f.ids[r], Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Del: ks}}})
		}
	}
	f.sink.ApplyUpdate(u)
	refusedN += int(f.sink.Stats().Errors - errs0)
	return float64(events) / (float64(cpu) / 1e9), min(1, float64(refusedN)/float64(groups)), nil
}
