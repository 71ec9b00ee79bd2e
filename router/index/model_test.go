package index

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refIndex is the obvious, slow model of an Index: per holder, per tier, the
// set of keys.
type refIndex map[holder][2]map[uint64]bool

func (r refIndex) update(replica string, cs []Change) {
	for _, c := range cs {
		h := holder{replica, c.Rank}
		sets, ok := r[h]
		if !ok {
			if len(c.Add) == 0 {
				continue
			}
			sets = [2]map[uint64]bool{{}, {}}
			r[h] = sets
		}
		for _, k := range c.Del {
			delete(sets[c.Tier], k)
		}
		for _, k := range c.Add {
			sets[c.Tier][k] = true
		}
	}
}

func (r refIndex) replace(replica string, bs []Blocks) {
	r.remove(replica)
	for _, b := range bs {
		h := holder{replica, b.Rank}
		if _, ok := r[h]; !ok {
			r[h] = [2]map[uint64]bool{{}, {}}
		}
		for _, k := range b.Keys {
			r[h][b.Tier][k] = true
		}
	}
}

func (r refIndex) remove(replica string) {
	for h := range r {
		if h.replica == replica {
			delete(r, h)
		}
	}
}

// holding counts the holders (ranks) of key on any tier.
func (r refIndex) holding(key uint64) (n int) {
	for _, sets := range r {
		if sets[GPU][key] || sets[CPU][key] {
			n++
		}
	}
	return n
}

// lookup computes, per replica, the best rank's match by brute force.
func (r refIndex) lookup(keys []uint64) map[string]Match {
	out := map[string]Match{}
	for h, sets := range r {
		m := Match{Replica: h.replica, Rank: h.rank}
		for _, k := range keys {
			gpu, cpu := sets[GPU][k], sets[CPU][k]
			if !gpu && !cpu {
				break
			}
			if gpu && m.GPURun == m.Blocks {
				m.GPURun++ // the GPU run goes on to the first block held only on CPU
			}
			m.Blocks++
			if gpu {
				m.GPUBlocks++
			}
		}
		if m.Blocks == 0 {
			continue
		}
		if old, ok := out[h.replica]; !ok || better(int32(m.Blocks), int32(m.GPUBlocks), m.Rank, int32(old.Blocks), int32(old.GPUBlocks), old.Rank) {
			out[h.replica] = m
		}
	}
	return out
}

// TestIndexMatchesModel applies random updates, snapshots and removals of a
// few replicas with two ranks and two tiers over a small key space, and
// compares every lookup with the brute-force model.
func TestIndexMatchesModel(t *testing.T) {
	matchModel(t, New(Options{}), refIndex{}, []string{"a", "b", "c", "d"}, 3000)
}

// TestPagedIndexMatchesModel is TestIndexMatchesModel over holders spread
// across several pages: filler replicas take slots 0-149 first, and some of
// them leave and come back while the test's replicas churn, so a key's
// holders span pages and its inline page changes.
func TestPagedIndexMatchesModel(t *testing.T) {
	ix, ref := New(Options{}), refIndex{}
	var fill []string
	for i := range 150 {
		name := fmt.Sprintf("fill-%03d", i)
		cs := []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + i)}}}
		if err := ix.Update(name, cs); err != nil {
			t.Fatal(err)
		}
		ref.update(name, cs)
		if i%50 == 7 {
			fill = append(fill, name)
		}
	}
	matchModel(t, ix, ref, append([]string{"a", "b", "c", "d"}, fill...), 1500)
	if ix.tab.Load().onePage() {
		t.Error("the table never left page 0: the test did not exercise the paged walk")
	}
}

// TestReplaceWhenFull: with every slot taken, a snapshot of a replica
// replaces its state in its own slots (no second slot needed), and the
// index still matches the model.
func TestReplaceWhenFull(t *testing.T) {
	ix, ref := New(Options{}), refIndex{}
	for i := range MaxHolders - 4 {
		name := fmt.Sprintf("fill-%04d", i)
		cs := []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + i)}}}
		if err := ix.Update(name, cs); err != nil {
			t.Fatal(err)
		}
		ref.update(name, cs)
	}
	// a..d with two ranks each need 8 slots: only 4 are free, so
	// Replace must often work in place.
	matchModel(t, ix, ref, []string{"a", "b", "c", "d"}, 150)
	if err := ix.Update("one-too-many", []Change{{Tier: GPU, Add: []uint64{1}}}); !errors.Is(err, ErrFull) && ix.free() == 0 {
		t.Errorf("a new holder in a full index: got %v; want ErrFull", err)
	}
}

// matchModel applies steps random updates, snapshots and removals of
// replicas (two ranks, two tiers, a key space of 40) to ix and ref, and
// after each compares ix's answers with the model's.
func matchModel(t *testing.T, ix *Index, ref refIndex, replicas []string, steps int) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	space := keysOf(40)
	for step := 0; step < steps; step++ {
		if !modelStep(t, ix, ref, r, space, replicas[r.IntN(len(replicas))]) {
			continue
		}
		// A prompt: a run of the key space from a random start.
		start := r.IntN(len(space))
		prompt := space[start:min(len(space), start+1+r.IntN(12))]
		checkLookups(t, step, ix, ref, prompt, replicas)
		checkCounts(t, step, ix, ref, prompt[0])
	}
}

// modelStep applies one random change of replica rep to ix and ref; false
// when ix refused it for want of slots (nothing changed).
func modelStep(t *testing.T, ix *Index, ref refIndex, r *rand.Rand, space []uint64, rep string) bool {
	t.Helper()
	pick := func(n int) []uint64 {
		ks := make([]uint64, n)
		for i := range ks {
			ks[i] = space[r.IntN(len(space))]
		}
		return ks
	}
	switch op := r.IntN(20); {
	case op < 14:
		// Half the batches span more than one of the writer's groups.
		cs := []Change{{Rank: r.IntN(2), Tier: Tier(r.IntN(2)), Add: pick(r.IntN(8) + writeGroup*r.IntN(2)), Del: pick(r.IntN(6) + writeGroup*r.IntN(2))}}
		if err := ix.Update(rep, cs); errors.Is(err, ErrFull) {
			return false // a new rank in a full index: nothing changed
		} else if err != nil {
			t.Fatal(err)
		}
		ref.update(rep, cs)
	case op < 18:
		bs := []Blocks{{Rank: r.IntN(2), Tier: Tier(r.IntN(2)), Keys: pick(r.IntN(20))}, {Rank: r.IntN(2), Tier: Tier(r.IntN(2)), Keys: pick(r.IntN(10))}}
		if err := ix.Replace(rep, bs); errors.Is(err, ErrFull) {
			return false // more new ranks than free slots: nothing changed
		} else if err != nil {
			t.Fatal(err)
		}
		ref.replace(rep, bs)
	default:
		ix.Remove(rep)
		ref.remove(rep)
	}
	return true
}

// checkLookups compares Lookup and LookupReplicas of prompt with the
// model's matches.
func checkLookups(t *testing.T, step int, ix *Index, ref refIndex, prompt []uint64, replicas []string) {
	t.Helper()
	got := map[string]Match{}
	for _, m := range ix.Lookup(prompt, nil) {
		if _, dup := got[m.Replica]; dup {
			t.Fatalf("step %d: replica %s matched twice", step, m.Replica)
		}
		got[m.Replica] = m
	}
	if d := cmp.Diff(ref.lookup(prompt), got); d != "" {
		t.Fatalf("step %d: lookup differs from the model (-want +got):\n%s", step, d)
	}
	// The same walk, answered in the caller's order of replicas (one
	// of them never known), with more orders in turn than the Index
	// remembers, so its remembered groups are both reused and replaced.
	names := nameOrders[step%len(nameOrders)]
	for i, m := range ix.LookupReplicas(prompt, 1, names, nil) {
		if want := got[names[i]]; m != want {
			t.Fatalf("step %d: LookupReplicas[%s] = %+v; want %+v", step, names[i], m, want)
		}
	}
	// A few of the replicas, sorted (a narrowed list): with many
	// holders of the first key, the walk follows only theirs.
	j := step % len(replicas)
	few := slices.Sorted(slices.Values(replicas[j:min(len(replicas), j+3)]))
	for i, m := range ix.LookupReplicas(prompt, 1, few, nil) {
		if want := got[few[i]]; m != want {
			t.Fatalf("step %d: LookupReplicas(%v)[%s] = %+v; want %+v", step, few, few[i], m, want)
		}
	}
}

// checkCounts compares HolderCount of key and Stats.Keys with the model,
// and AppendHolders of key with the names of a Lookup of key alone (which
// checkLookups holds to the model), appended after what dst held.
func checkCounts(t *testing.T, step int, ix *Index, ref refIndex, key uint64) {
	t.Helper()
	if got, want := ix.HolderCount(key), ref.holding(key); got != want {
		t.Fatalf("step %d: HolderCount = %d; the model has %d ranks holding the key", step, got, want)
	}
	want := []string{"kept"}
	for _, m := range ix.Lookup([]uint64{key}, nil) {
		want = append(want, m.Replica)
	}
	if got := ix.AppendHolders(key, []string{"kept"}); !slices.Equal(got, want) {
		t.Fatalf("step %d: AppendHolders = %q; want %q, Lookup's names in its order", step, got, want)
	}
	distinct := map[uint64]bool{}
	for _, sets := range ref {
		for _, s := range sets {
			for k := range s {
				distinct[k] = true
			}
		}
	}
	if st := ix.Stats(); st.Keys != len(distinct) {
		t.Fatalf("step %d: Stats.Keys = %d; model holds %d", step, st.Keys, len(distinct))
	}
}

func keysOf(n int) []uint64 {
	ks := make([]uint64, n)
	for i := range ks {
		ks[i] = uint64(i) * 0x9E3779B97F4A7C15
	}
	ks[0] = 0 // key 0 is stored apart in its shard's table
	return ks
}

// TestLookupStrideOnPrefixes: when every holder's blocks are a prefix of the
// prompt's chain (what vLLM's tail-first eviction leaves), the strided walk
// gives exactly the exact walk's answer, for any stride.
func TestLookupStrideOnPrefixes(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	prompt := keysOf(300)[1:]
	for trial := 0; trial < 200; trial++ {
		ix := New(Options{})
		for h := 0; h < 1+r.IntN(10); h++ {
			gpu := r.IntN(len(prompt) + 1)
			cpu := gpu + r.IntN(len(prompt)+1-gpu) // offloaded blocks extend the GPU prefix
			cs := []Change{{Rank: r.IntN(2), Tier: GPU, Add: prompt[:gpu]}, {Rank: 0, Tier: CPU, Add: prompt[:cpu]}}
			if r.IntN(2) == 0 {
				cs = cs[:1]
			}
			if err := ix.Update(fmt.Sprint("r", h), cs); err != nil {
				t.Fatal(err)
			}
		}
		want := ix.Lookup(prompt, nil)
		for _, stride := range []int{2, 7, 32, 64, 1000} {
			if d := cmp.Diff(want, ix.LookupStride(prompt, stride, nil)); d != "" {
				t.Fatalf("trial %d stride %d (-exact +strided):\n%s", trial, stride, d)
			}
		}
	}
}

// TestLookupStrideHole documents the approximation: a holder with a hole in
// its chain is credited past the hole when the hole is skipped.
func TestLookupStrideHole(t *testing.T) {
	prompt := keysOf(64)[1:]
	ix := New(Options{})
	holey := append(append([]uint64(nil), prompt[:10]...), prompt[11:]...)
	if err := ix.Update("r", []Change{{Tier: GPU, Add: holey}}); err != nil {
		t.Fatal(err)
	}
	if got := ix.Lookup(prompt, nil)[0].Blocks; got != 10 {
		t.Errorf("exact walk: %d blocks; want 10", got)
	}
	if got := ix.LookupStride(prompt, 32, nil)[0].Blocks; got != len(prompt) {
		t.Errorf("strided walk: %d blocks; want %d (the hole is skipped)", got, len(prompt))
	}
}

func TestModelsLookupReplicas(t *testing.T) {
	ms := NewModels(Options{})
	if err := ms.For("m").Update("a", []Change{{Tier: GPU, Add: []uint64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	stale := []Match{{Replica: "old", Blocks: 9}, {Replica: "old"}, {Replica: "old"}}
	got := ms.LookupReplicas("m", []uint64{1, 2, 3}, 1, []string{"b", "a"}, stale)
	if want := []Match{{}, {Replica: "a", Blocks: 2, GPUBlocks: 2, GPURun: 2}}; !cmp.Equal(got, want) {
		t.Errorf("known model: %+v; want %+v", got, want)
	}
	got = ms.LookupReplicas("other", []uint64{1}, 1, []string{"a", "b"}, stale)
	if want := []Match{{}, {}}; !cmp.Equal(got, want) {
		t.Errorf("unknown model: %+v; want %+v", got, want)
	}
}

// nameOrders are the candidate lists the model test passes LookupReplicas:
// more than groupCacheSize of them, some sharing their strings, some
// sorted (which LookupReplicas searches instead of resolving every name).
var nameOrders = func() [][]string {
	base := []string{"d", "unknown", "b", "a", "c"}
	out := [][]string{base, {"a", "b"}, {"c"}, {"unknown"}, {"b", "d", "a", "c"}, {}, {"a", "c", "d", "fill-057", "unknown"}}
	out = append(out, append([]string(nil), base...)) // equal strings, another slice
	return out
}()

// TestLookupReplicasRemembersGroups: a router passes the same candidate
// list on every request; once its groups are remembered, a lookup with it
// allocates nothing, and a holder joining (a new slot table) is seen at
// once.
func TestLookupReplicasRemembersGroups(t *testing.T) {
	ix := New(Options{})
	if err := ix.Update("a", []Change{{Tier: GPU, Add: []uint64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	names, keys := []string{"b", "a"}, []uint64{1, 2}
	out := ix.LookupReplicas(keys, 1, names, nil)
	out = ix.LookupReplicas(keys, 1, names, out) // a second miss: remembered
	if !ix.groupsRemembered(names) {
		t.Errorf("a list passed twice is not remembered")
	}
	// The walk's scratch is pooled, and sync.Pool drops items at random
	// under the race detector.
	if allocs := testing.AllocsPerRun(100, func() { out = ix.LookupReplicas(keys, 1, names, out) }); allocs != 0 && !raceEnabled {
		t.Errorf("LookupReplicas with a remembered list: %v allocations; want 0", allocs)
	}
	if err := ix.Update("b", []Change{{Tier: CPU, Add: []uint64{1}}}); err != nil {
		t.Fatal(err)
	}
	out = ix.LookupReplicas(keys, 1, names, out)
	if want := []Match{{Replica: "b", Blocks: 1}, {Replica: "a", Blocks: 2, GPUBlocks: 2, GPURun: 2}}; !cmp.Equal(out, want) {
		t.Errorf("after b joined: %+v; want %+v", out, want)
	}
}

// groupsRemembered reports whether LookupReplicas remembers names' groups
// in the current slot table.
func (ix *Index) groupsRemembered(names []string) bool {
	return ix.groups.remembered(ix.tab.Load(), names) != nil
}

// TestLookupReplicasOneOffLists: lists seen once each (a large fleet's
// narrowed candidates) are answered right, allocate nothing once warm,
// and do not push out the list the router passes on every request.
func TestLookupReplicasOneOffLists(t *testing.T) {
	ix := New(Options{})
	for _, id := range []string{"a", "b", "c", "d"} {
		if err := ix.Update(id, []Change{{Tier: GPU, Add: []uint64{1}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Not sorted: a sorted list with few matches is searched, not
	// remembered (see LookupReplicas).
	full, keys := []string{"d", "c", "b", "a"}, []uint64{1}
	out := ix.LookupReplicas(keys, 1, full, nil)
	out = ix.LookupReplicas(keys, 1, full, out) // a second miss: remembered
	oneOff := [][]string{{"b"}, {"d", "a"}, {"c", "x"}, {"a", "c"}, {"x"}, {"d", "b", "a"}}
	for _, names := range oneOff {
		got := ix.LookupReplicas(keys, 1, names, nil)
		for i, m := range got {
			if want := names[i]; (want == "x") != (m.Replica == "") || want != "x" && m.Replica != want {
				t.Errorf("LookupReplicas(%v)[%d] = %+v", names, i, m)
			}
		}
	}
	if !ix.groupsRemembered(full) {
		t.Errorf("the remembered list was pushed out by %d one-off lists", len(oneOff))
	}
	if raceEnabled {
		return // sync.Pool drops the walk's scratch at random under the race detector
	}
	if allocs := testing.AllocsPerRun(100, func() { out = ix.LookupReplicas(keys, 1, full, out) }); allocs != 0 {
		t.Errorf("the remembered list after %d one-off lists: %v allocations; want 0", len(oneOff), allocs)
	}
	i := 0
	if allocs := testing.AllocsPerRun(100, func() {
		out = ix.LookupReplicas(keys, 1, oneOff[i%len(oneOff)], out)
		i++
	}); allocs != 0 {
		t.Errorf("one-off lists: %v allocations each; want 0", allocs)
	}
}

// TestReplaceInPlace: with no slot free, a snapshot replaces a replica's
// state in its own slot (no ErrFull, no second slot), stale keys go.
func TestReplaceInPlace(t *testing.T) {
	ix := New(Options{})
	for i := range MaxHolders - 1 {
		if err := ix.Update(fmt.Sprintf("fill-%04d", i), []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Update("a", []Change{{Tier: GPU, Add: []uint64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if ix.free() != 0 {
		t.Fatalf("%d slots free; the test needs a full index", ix.free())
	}
	if err := ix.Replace("a", []Blocks{{Tier: GPU, Keys: []uint64{2, 3}}}); err != nil {
		t.Fatalf("Replace in a full index: %v", err)
	}
	if got := ix.Lookup([]uint64{1}, nil); len(got) != 0 {
		t.Errorf("stale key 1 still held: %+v", got)
	}
	if got := ix.Lookup([]uint64{2, 3}, nil); len(got) != 1 || got[0].Replica != "a" || got[0].Blocks != 2 {
		t.Errorf("Lookup(2, 3) = %+v; want a with 2 blocks", got)
	}
	if gpu, _ := ix.ReplicaBlocks("a"); gpu != 2 {
		t.Errorf("ReplicaBlocks(a) = %d; want 2", gpu)
	}
	if err := ix.Replace("a", []Blocks{{Tier: GPU, Keys: []uint64{4}}, {Rank: 1, Tier: GPU, Keys: []uint64{5}}}); !errors.Is(err, ErrFull) {
		t.Errorf("Replace needing a new rank's slot in a full index: got %v; want ErrFull", err)
	}
}
