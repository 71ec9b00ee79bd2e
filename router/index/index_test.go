package index

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func seq(from, to uint64) []uint64 {
	var ks []uint64
	for k := from; k <= to; k++ {
		ks = append(ks, k*0x9E3779B97F4A7C15) // spread over shards
	}
	return ks
}

// lookupCase is one of TestLookup's cases: updates applied in order,
// then removals, then a Lookup of the prompt.
type lookupCase struct {
	name    string
	updates []lookupUpdate
	remove  []string
	want    []Match
}

type lookupUpdate struct {
	replica string
	changes []Change
}

// lookupCases are TestLookup's cases over prompt, six keys.
func lookupCases(prompt []uint64) []lookupCase {
	type upd = lookupUpdate
	return []lookupCase{
		{name: "empty index"},
		{
			name:    "full gpu match",
			updates: []upd{{"r1", []Change{{Tier: GPU, Add: prompt[:6]}}}},
			want:    []Match{{Replica: "r1", Blocks: 6, GPUBlocks: 6, GPURun: 6}},
		},
		{
			name:    "partial match stops at the first missing block",
			updates: []upd{{"r1", []Change{{Tier: GPU, Add: []uint64{prompt[0], prompt[1], prompt[3]}}}}},
			want:    []Match{{Replica: "r1", Blocks: 2, GPUBlocks: 2, GPURun: 2}},
		},
		{
			name:    "no first block, no match",
			updates: []upd{{"r1", []Change{{Tier: GPU, Add: prompt[1:]}}}},
		},
		{
			name: "cpu tier extends the prefix but counts apart",
			updates: []upd{{"r1", []Change{
				{Tier: GPU, Add: prompt[:2]},
				{Tier: CPU, Add: prompt[:4]},
			}}},
			want: []Match{{Replica: "r1", Blocks: 4, GPUBlocks: 2, GPURun: 2}},
		},
		{
			name: "a hole in the GPU copies ends the GPU run",
			updates: []upd{{"r1", []Change{
				{Tier: GPU, Add: []uint64{prompt[0], prompt[2], prompt[3]}},
				{Tier: CPU, Add: prompt[:4]},
			}}},
			want: []Match{{Replica: "r1", Blocks: 4, GPUBlocks: 3, GPURun: 1}},
		},
		{
			name: "best rank wins",
			updates: []upd{{"r1", []Change{
				{Rank: 0, Tier: GPU, Add: prompt[:2]},
				{Rank: 1, Tier: GPU, Add: prompt[:5]},
			}}},
			want: []Match{{Replica: "r1", Rank: 1, Blocks: 5, GPUBlocks: 5, GPURun: 5}},
		},
		{
			name: "several replicas",
			updates: []upd{
				{"r1", []Change{{Tier: GPU, Add: prompt[:1]}}},
				{"r2", []Change{{Tier: GPU, Add: prompt}}},
				{"r3", []Change{{Tier: CPU, Add: prompt[:3]}}},
			},
			want: []Match{
				{Replica: "r1", Blocks: 1, GPUBlocks: 1, GPURun: 1},
				{Replica: "r2", Blocks: 6, GPUBlocks: 6, GPURun: 6},
				{Replica: "r3", Blocks: 3, GPUBlocks: 0, GPURun: 0},
			},
		},
		{
			name: "deletions apply before additions",
			updates: []upd{
				{"r1", []Change{{Tier: GPU, Add: prompt}}},
				{"r1", []Change{{Tier: GPU, Del: prompt[2:], Add: prompt[5:]}}},
			},
			want: []Match{{Replica: "r1", Blocks: 2, GPUBlocks: 2, GPURun: 2}},
		},
		{
			name: "removed replica disappears",
			updates: []upd{
				{"r1", []Change{{Tier: GPU, Add: prompt}}},
				{"r2", []Change{{Tier: GPU, Add: prompt[:2]}}},
			},
			remove: []string{"r1"},
			want:   []Match{{Replica: "r2", Blocks: 2, GPUBlocks: 2, GPURun: 2}},
		},
	}
}

func TestLookup(t *testing.T) {
	prompt := seq(1, 6)
	for _, tc := range lookupCases(prompt) {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(Options{})
			for _, u := range tc.updates {
				if err := ix.Update(u.replica, u.changes); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range tc.remove {
				ix.Remove(r)
			}
			got := ix.Lookup(prompt, nil)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Lookup (-want +got):\n%s", d)
			}
		})
	}
}

func TestReplaceAndRemoveFreeEverything(t *testing.T) {
	ix := New(Options{})
	a, b := seq(1, 100), seq(50, 120)
	if err := ix.Update("r1", []Change{{Tier: GPU, Add: a}, {Rank: 1, Tier: CPU, Add: a}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Replace("r1", []Blocks{{Tier: GPU, Keys: b}}); err != nil {
		t.Fatal(err)
	}
	if got := ix.Lookup(a, nil); len(got) != 0 {
		t.Errorf("old state still visible after Replace: %+v", got)
	}
	if got := ix.Lookup(b, nil); len(got) != 1 || got[0].Blocks != len(b) {
		t.Errorf("Lookup after Replace = %+v; want r1 with %d blocks", got, len(b))
	}
	if st := ix.Stats(); st.Keys != len(b) || st.Holders != 1 {
		t.Errorf("Stats after Replace = %+v; want %d keys, 1 holder", st, len(b))
	}
	if gpu, cpu := ix.ReplicaBlocks("r1"); gpu != len(b) || cpu != 0 {
		t.Errorf("ReplicaBlocks = %d gpu, %d cpu; want %d, 0", gpu, cpu, len(b))
	}
	ix.Remove("r1")
	if st := ix.Stats(); st.Keys != 0 || st.Holders != 0 {
		t.Errorf("Stats after Remove = %+v; want empty", st)
	}
	ix.Remove("never-seen") // no-op
	// Every slot is free again: MaxHolders new holders fit.
	for i := 0; i < MaxHolders; i++ {
		if err := ix.Update(fmt.Sprintf("r%d", i), []Change{{Tier: GPU, Add: a[:1]}}); err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
	}
	err := ix.Update("one-too-many", []Change{{Tier: GPU, Add: a[:1]}})
	if !errors.Is(err, ErrFull) {
		t.Errorf("holder %d: got %v; want ErrFull", MaxHolders+1, err)
	}
	if err := ix.Replace("also-too-many", []Blocks{{Keys: a[:1]}}); !errors.Is(err, ErrFull) {
		t.Errorf("Replace beyond capacity: got %v; want ErrFull", err)
	}
}

func TestUnknownTier(t *testing.T) {
	ix := New(Options{})
	if err := ix.Update("r1", []Change{{Tier: 7, Add: seq(1, 2)}}); err == nil {
		t.Error("Update with tier 7: got nil error")
	}
	if err := ix.Replace("r1", []Blocks{{Tier: 7, Keys: seq(1, 2)}}); err == nil {
		t.Error("Replace with tier 7: got nil error")
	}
	if st := ix.Stats(); st.Keys != 0 {
		t.Errorf("rejected updates left %d keys", st.Keys)
	}
}

func TestMaxKeys(t *testing.T) {
	var alarms []string
	ix := New(Options{MaxKeys: 10, OnOverflow: func(keys, max int) {
		alarms = append(alarms, fmt.Sprintf("%d/%d", keys, max))
	}})
	if err := ix.Update("r1", []Change{{Tier: GPU, Add: seq(1, 15)}}); !errors.Is(err, ErrKeyCap) {
		t.Fatalf("Update over MaxKeys: got %v; want ErrKeyCap", err)
	}
	if ix.Room() {
		t.Error("Room at MaxKeys: got true")
	}
	st := ix.Stats()
	if st.Keys != 10 || st.Rejected != 5 {
		t.Errorf("Stats = %+v; want 10 keys, 5 rejected", st)
	}
	// A second holder of an existing key costs no new key.
	if err := ix.Update("r2", []Change{{Tier: GPU, Add: seq(1, 3)}}); err != nil {
		t.Fatal(err)
	}
	if got := ix.Stats().Rejected; got != 5 {
		t.Errorf("holding existing keys was rejected: %d rejected", got)
	}
	if d := cmp.Diff([]string{"10/10"}, alarms); d != "" {
		t.Errorf("alarms (-want +got):\n%s", d)
	}
	// Shrinking re-arms the alarm.
	ix.Remove("r1")
	ix.Remove("r2")
	if !ix.Room() {
		t.Error("Room of an emptied index: got false")
	}
	if err := ix.Update("r1", []Change{{Tier: GPU, Add: seq(100, 111)}}); !errors.Is(err, ErrKeyCap) {
		t.Fatalf("Update over MaxKeys: got %v; want ErrKeyCap", err)
	}
	if len(alarms) != 2 {
		t.Errorf("alarms = %v; want a second alarm after shrinking and overflowing again", alarms)
	}
	// Lifting the cap admits new keys again.
	ix.SetMaxKeys(0)
	if err := ix.Update("r1", []Change{{Tier: GPU, Add: seq(200, 219)}}); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Keys != 30 {
		t.Errorf("after SetMaxKeys(0): %d keys; want 30", st.Keys)
	}
}

// TestReadersSeeWholeStates runs readers against a writer that flips a
// replica between two snapshots and removes it: a reader must only ever see
// one of the states, never a mixture or a half-built one, and the first
// block's holders as steady and, while it holds the block, flip.
func TestReadersSeeWholeStates(t *testing.T) {
	ix := New(Options{})
	prompt := seq(1, 64)
	stateA := []Blocks{{Tier: GPU, Keys: prompt}}      // 64 blocks
	stateB := []Blocks{{Tier: GPU, Keys: prompt[:20]}} // 20 blocks
	if err := ix.Update("steady", []Change{{Tier: GPU, Add: prompt[:10]}}); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []Match
			var names []string
			for !stop.Load() {
				names = ix.AppendHolders(prompt[0], names[:0])
				if !slices.Contains(names, "steady") || len(names) > 2 || len(names) == 2 && names[1] != "flip" {
					select {
					case errs <- fmt.Sprintf("reader saw holders %q; want steady, then flip or not", names):
					default:
					}
				}
				buf = ix.Lookup(prompt, buf[:0])
				steady := false
				for _, m := range buf {
					switch {
					case m.Replica == "steady" && m.Blocks == 10:
						steady = true
					case m.Replica == "flip" && (m.Blocks == 64 || m.Blocks == 20):
					default:
						select {
						case errs <- fmt.Sprintf("reader saw %+v", m):
						default:
						}
					}
				}
				if !steady {
					select {
					case errs <- "reader lost the steady replica":
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < 100; i++ {
		state := stateA
		if i%2 == 1 {
			state = stateB
		}
		if err := ix.Replace("flip", state); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			ix.Remove("flip")
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestReadsDuringChurn reads a steady replica's prompt while the writer
// grows and shrinks the same shards' tables (resizes and backward shifts):
// every read must see the steady prompt whole.
func TestReadsDuringChurn(t *testing.T) {
	ix := New(Options{})
	prompt := seq(1, 32)
	if err := ix.Update("steady", []Change{{Tier: GPU, Add: prompt}}); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	bad := make(chan []Match, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var buf []Match
		for !stop.Load() {
			buf = ix.Lookup(prompt, buf[:0])
			if len(buf) != 1 || buf[0].Blocks != len(prompt) {
				select {
				case bad <- append([]Match(nil), buf...):
				default:
				}
			}
		}
	}()
	churn := seq(1000, 9000)
	for round := 0; round < 6; round++ {
		if err := ix.Update("churn", []Change{{Tier: GPU, Add: churn}}); err != nil {
			t.Fatal(err)
		}
		if err := ix.Update("churn", []Change{{Tier: GPU, Del: churn}}); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case m := <-bad:
		t.Errorf("a read during churn saw %+v; want steady with %d blocks", m, len(prompt))
	default:
	}
	if st := ix.Stats(); st.Keys != len(prompt) {
		t.Errorf("after churn %d keys; want %d", st.Keys, len(prompt))
	}
}

func TestOversized(t *testing.T) {
	ix := New(Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ix.Update("fits", []Change{{Tier: GPU, Add: seq(1, 100)}, {Tier: CPU, Add: seq(1, 50)}}))
	must(ix.Update("leaky", []Change{{Rank: 0, Tier: GPU, Add: seq(1, 80)}, {Rank: 1, Tier: GPU, Add: seq(200, 260)}}))
	must(ix.Update("cpu-leaky", []Change{{Tier: CPU, Add: seq(1, 30)}}))
	must(ix.Update("unknown", []Change{{Tier: GPU, Add: seq(1, 1000)}}))
	capacity := func(r string) (int, int, bool) {
		switch r {
		case "fits":
			return 100, 50, true
		case "leaky":
			return 100, 0, true // 141 GPU blocks over two ranks
		case "cpu-leaky":
			return 100, 20, true
		}
		return 0, 0, false
	}
	want := []Oversize{
		{Replica: "cpu-leaky", Tier: CPU, Held: 30, Capacity: 20},
		{Replica: "leaky", Tier: GPU, Held: 141, Capacity: 100},
	}
	if d := cmp.Diff(want, ix.Oversized(capacity, 0.1)); d != "" {
		t.Errorf("Oversized (-want +got):\n%s", d)
	}
	if got := ix.Oversized(capacity, 0.5); len(got) != 0 {
		t.Errorf("with 50%% slack: %+v; want none", got)
	}
}

// TestRetiredTablesDoNotAccumulate: snapshots of idle replicas publish new
// slot tables without sweeping; replaced tables nobody reads are released.
func TestRetiredTablesDoNotAccumulate(t *testing.T) {
	ix := New(Options{})
	for i := 0; i < 1000; i++ {
		if err := ix.Replace("idle", nil); err != nil {
			t.Fatal(err)
		}
		if err := ix.Update(fmt.Sprint("r", i%3), []Change{{Tier: GPU, Add: seq(1, 2)}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ix.retired); n > 1 {
		t.Errorf("%d replaced tables kept without readers", n)
	}
}
