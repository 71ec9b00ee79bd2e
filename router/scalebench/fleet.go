package scalebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// blockSize is the fleet's engine block size, vLLM's default.
const blockSize = 16

// promptHolders is how many replicas hold part of each prompt: the base
// fleet's every replica.
const promptHolders = 64

// model is the one model the fleet serves.
const model = "m"

// fleet is one point of the sweep: a router's state for replicas of one
// model over about blocks indexed blocks, and prompts of tokens tokens
// held by promptHolders replicas (all of them in a smaller fleet), spread
// evenly over the fleet: holder j, replica j·n/promptHolders, holds the
// first (h-j)/h of each prompt (h holders), so the walk visits every
// prompt block and the first replica (always accepted) holds all of it.
// The other replicas hold only their share of random blocks, and no
// replica has a request in flight. A prompt's holders are a property of
// the prompt, not of the fleet: with them fixed, a point of the replicas
// axis differs from another only in the replicas the prompt is not on.
type fleet struct {
	replicas, blocks, tokens int
	ids                      []string
	prompts                  [][]uint32
	depths                   []int // prompt blocks each accepted holder has, in order
	models                   *index.Models
	sink                     *ingest.Sink
	set                      *replicas.Set
	sched                    *scheduler.Scheduler
	indexed                  int     // replicas whose state the index accepted
	keys                     int     // keys the index holds
	heapPerBlock             float64 // heap bytes per indexed key, after GC
	heapBytes                uint64  // the router state's heap, after GC
}

// replicaID names replica r as a Nomad allocation's task does.
func replicaID(r int) string { return fmt.Sprintf("alloc-%04d/vllm", r) }

// newFleet builds a fleet and measures its heap per block: the heap after
// GC with the state built, less the heap before, over the keys indexed.
func newFleet(nReplicas, blocks, tokens, prompts int, seed uint64) (*fleet, error) {
	f := &fleet{replicas: nReplicas, blocks: blocks, tokens: tokens}
	rng := rand.New(rand.NewPCG(seed, 1))
	var promptKeys [][]blockkey.Key
	f.prompts, promptKeys = randomPrompts(rng, tokens, max(1, prompts))

	var before, after runtime.MemStats
	settle()
	runtime.ReadMemStats(&before)
	f.buildState()
	depths := f.ingestSnapshot(rng, promptKeys)
	for r, id := range f.ids {
		if gpu, _ := f.models.For(model).ReplicaBlocks(id); gpu > 0 {
			f.indexed++
			f.depths = append(f.depths, depths[r])
		}
	}
	settle()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(promptKeys) // allocated before the first reading
	f.keys = f.models.For(model).Stats().Keys
	if f.keys == 0 {
		return nil, fmt.Errorf("fleet of %d replicas: the index accepted no keys", nReplicas)
	}
	f.heapBytes = after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)
	f.heapPerBlock = float64(f.heapBytes) / float64(f.keys)

	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		return nil, err
	}
	var err error
	f.sched, err = reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: f.models, Rand: rand.NewPCG(seed, 2)})
	if err != nil {
		return nil, fmt.Errorf("build the default scheduler: %w", err)
	}
	return f, nil
}

// randomPrompts draws n prompts of tokens random token IDs and their block
// keys.
func randomPrompts(rng *rand.Rand, tokens, n int) ([][]uint32, [][]blockkey.Key) {
	var prompts [][]uint32
	var keys [][]blockkey.Key
	for range n {
		ids := make([]uint32, tokens)
		for i := range ids {
			ids[i] = rng.Uint32N(150_000)
		}
		prompts = append(prompts, ids)
		keys = append(keys, blockkey.PromptKeys(nil, "", "", ids, blockSize))
	}
	return prompts, keys
}

// buildState makes the router's index, ingest sink and replica set, with
// f.replicas replicas of the model.
func (f *fleet) buildState() {
	f.models = index.NewModels(index.Options{})
	f.sink = ingest.New(f.models, ingest.Options{})
	f.set = replicas.New(f.sink, load.NewTracker(), replicas.Options{Holders: f.models})
	list := make([]replicas.Replica, f.replicas)
	f.ids = make([]string, f.replicas)
	for r := range list {
		f.ids[r] = replicaID(r)
		list[r] = replicas.Replica{ID: f.ids[r], Model: model, Address: "127.0.0.1:1", BlockSize: blockSize}
	}
	f.set.Replace(list)
}

// ingestSnapshot sends one driver snapshot of every replica through the
// ingest, so every replica the index accepts is in exact mode: replica r
// holds the first depths[r] blocks of each prompt (promptDepth) and its
// share of random blocks up to f.blocks in all. The snapshot is garbage when it returns,
// so the heap reading after it counts only the state.
func (f *fleet) ingestSnapshot(rng *rand.Rand, promptKeys [][]blockkey.Key) (depths []int) {
	nReplicas := f.replicas
	pb := len(promptKeys[0])
	rest := max(0, f.blocks-pb*len(promptKeys))
	background, extra := rest/nReplicas, rest%nReplicas
	snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Seq: 1, Snapshot: true}
	depths = make([]int, nReplicas)
	for r := range nReplicas {
		n := background
		if r < extra {
			n++
		}
		depths[r] = promptDepth(r, nReplicas, pb)
		add := make([]uint64, 0, n+depths[r]*len(promptKeys))
		for range n {
			add = append(add, rng.Uint64())
		}
		for _, pk := range promptKeys {
			for _, k := range pk[:depths[r]] {
				add = append(add, uint64(k))
			}
		}
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: f.ids[r], BlockSize: blockSize,
			Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add}}})
	}
	f.sink.ApplyUpdate(snap)
	return depths
}

// promptDepth is how many of a prompt's pb blocks replica r of n holds:
// holder j (replica j·spread) the first (h-j)/h, none for the others.
func promptDepth(r, n, pb int) int {
	h := min(n, promptHolders)
	spread := n / h
	if r%spread != 0 || r/spread >= h {
		return 0
	}
	return pb * (h - r/spread) / h
}

// fallbacks is how many ranked fallbacks the decision asks for: the
// gateway's default of three attempts less the first, and one spare.
const fallbacks = 3

// decider runs the gateway's decision over a fleet with reused buffers,
// as the gateway reuses a pooled plan.
type decider struct {
	f     *fleet
	keys  []blockkey.Key
	words []uint64
	req   scheduler.Request
	cands []scheduler.Candidate
}

func newDecider(f *fleet) *decider {
	n := f.tokens / blockSize
	return &decider{f: f, keys: make([]blockkey.Key, 0, n), words: make([]uint64, n)}
}

// decide makes one decision over prompt i and checks that it found the
// replica holding the whole prompt.
func (d *decider) decide(ctx context.Context, i int) error {
	d.keys = blockkey.PromptKeys(d.keys[:0], "", "", d.f.prompts[i], blockSize)
	for i, k := range d.keys {
		d.words[i] = uint64(k)
	}
	d.req.Reset(scheduler.Request{Model: model, Keys: d.words, BlockTokens: blockSize, PromptTokens: d.f.tokens, Fallbacks: fallbacks})
	d.cands = d.f.set.AppendCandidatesFor(d.cands[:0], model, &d.req)
	dec, err := d.f.sched.Schedule(ctx, &d.req, d.cands)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if dec.Chosen.CachedBlocks != len(d.keys) {
		return fmt.Errorf("chose %s with %d of %d blocks cached; want the replica holding the whole prompt",
			dec.Chosen.Candidate.ID, dec.Chosen.CachedBlocks, len(d.keys))
	}
	return nil
}

// stride is the walk's stride for the fleet's prompt under the default
// prefix scorer: every block, or every 32nd from 32k tokens.
func (f *fleet) stride() int {
	if f.tokens >= scheduler.DefaultLongPromptTokens {
		return scheduler.DefaultLongStride
	}
	return 1
}

// probes is how many index slots the walk reads for the fleet's prompt
// (index.LookupStride's walk, replayed over the accepted holders' depths):
// with stride 1 every block; else one per stride, and every block of a
// stride in which a holder drops out.
func (f *fleet) probes() int {
	return probeCount(f.tokens/blockSize, f.stride(), f.depths)
}

func probeCount(blocks, stride int, depths []int) int {
	if stride <= 1 {
		return blocks
	}
	n := 0
	for pos := 0; pos < blocks; pos += stride {
		end := min(pos+stride, blocks)
		n++
		for _, d := range depths {
			if d >= pos && d < end {
				n += end - pos
				break
			}
		}
	}
	return n
}

// settle collects garbage twice: sync.Pool keeps what it held through one
// collection (its victim cache), so the previous fleet's pooled buffers
// would otherwise count in this one's reading.
func settle() {
	runtime.GC()
	runtime.GC()
}
