package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkMap fails t unless m holds exactly want.
func checkMap(t *testing.T, m stateMap, want map[string]published, probe []string) {
	t.Helper()
	if m.Len() != len(want) {
		t.Fatalf("Len = %d; want %d", m.Len(), len(want))
	}
	for _, k := range probe {
		got, ok := m.Get(k)
		w, wok := want[k]
		if ok != wok || got != w {
			t.Fatalf("Get(%q) = %v, %v; want %v, %v", k, got, ok, w, wok)
		}
	}
}

// TestStateMapAgainstMap runs random sets and deletes against a Go map and
// checks every version, including ones kept from before later changes:
// readers hold old versions while the Sink makes new ones.
func TestStateMapAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("alloc-%04d/vllm", i)
	}
	type version struct {
		m    stateMap
		want map[string]published
	}
	var kept []version
	var m stateMap
	want := map[string]published{}
	for step := range 20_000 {
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(3) {
		case 0, 1:
			v := published{}
			if rng.IntN(2) == 0 {
				v = published{refused: true, reason: fmt.Sprint("full ", step%3)}
			}
			m = m.Set(k, v)
			want[k] = v
		case 2:
			m = m.Delete(k)
			delete(want, k)
		}
		if step%2000 == 0 {
			cp := make(map[string]published, len(want))
			for k, v := range want {
				cp[k] = v
			}
			kept = append(kept, version{m, cp})
		}
	}
	checkMap(t, m, want, keys)
	for i, v := range kept {
		t.Run(fmt.Sprint("kept ", i), func(t *testing.T) { checkMap(t, v.m, v.want, keys) })
	}
	for _, k := range keys {
		m = m.Delete(k)
	}
	if m.Len() != 0 || m.root != nil {
		t.Errorf("after deleting every key: Len %d, root %v; want an empty map", m.Len(), m.root)
	}
}

// depth is how many nodes the path to h's slot crosses.
func depth(m stateMap, h uint64) int {
	d := 0
	for n, shift := m.root, uint(0); n != nil; shift += trieBits {
		d++
		bit, i := slot(n.bitmap, h, shift)
		if n.bitmap&bit == 0 {
			break
		}
		n = n.kids[i].sub
	}
	return d
}

// TestStateMapHashes drives the trie with chosen hashes: equal ones (a
// collision shares a slot), ones equal but for their top bits (the deepest
// level), and deletions that must fold the paths they leave behind.
func TestStateMapHashes(t *testing.T) {
	for _, st := range hashSteps() {
		t.Run(st.name, func(t *testing.T) { st.check(t) })
	}
}

// hashOp sets or deletes key under a hash the test chooses.
type hashOp struct {
	del  bool
	key  string
	hash uint64
}

// hashStep is a sequence of hashOps from an empty map and what it leaves.
type hashStep struct {
	name  string
	ops   []hashOp
	want  map[string]uint64 // key -> hash, present after
	depth map[uint64]int    // hash -> nodes on its path after
}

func hashSteps() []hashStep {
	const top = uint64(1) << 63 // differs in the last, 4-bit chunk only
	return []hashStep{
		{
			name: "collision shares a slot",
			ops:  []hashOp{{key: "a", hash: 7}, {key: "b", hash: 7}},
			want: map[string]uint64{"a": 7, "b": 7}, depth: map[uint64]int{7: 1},
		},
		{
			name: "one of a collision deleted",
			ops:  []hashOp{{key: "a", hash: 7}, {key: "b", hash: 7}, {del: true, key: "a", hash: 7}},
			want: map[string]uint64{"b": 7}, depth: map[uint64]int{7: 1},
		},
		{
			name: "absent key of a colliding hash",
			ops:  []hashOp{{key: "a", hash: 7}, {del: true, key: "z", hash: 7}},
			want: map[string]uint64{"a": 7},
		},
		{
			name: "hashes equal but for the top bits go 13 levels down",
			ops:  []hashOp{{key: "a", hash: 5}, {key: "b", hash: 5 | top}},
			want: map[string]uint64{"a": 5, "b": 5 | top}, depth: map[uint64]int{5: 13, 5 | top: 13},
		},
		{
			name: "deleting one folds the path",
			ops:  []hashOp{{key: "a", hash: 5}, {key: "b", hash: 5 | top}, {del: true, key: "b", hash: 5 | top}},
			want: map[string]uint64{"a": 5}, depth: map[uint64]int{5: 1},
		},
		{
			name: "a third hash keeps the branch it shares",
			ops: []hashOp{{key: "a", hash: 5}, {key: "b", hash: 5 | top}, {key: "c", hash: 5 | 1<<10},
				{del: true, key: "b", hash: 5 | top}},
			want: map[string]uint64{"a": 5, "c": 5 | 1<<10}, depth: map[uint64]int{5: 3, 5 | 1<<10: 3},
		},
		{
			name: "set again replaces, not adds",
			ops:  []hashOp{{key: "a", hash: 5}, {key: "a", hash: 5}},
			want: map[string]uint64{"a": 5},
		},
	}
}

// check applies st's ops and checks the keys present, their values (each
// as last set) and the depth of the paths to st's hashes.
func (st hashStep) check(t *testing.T) {
	var m stateMap
	last := map[string]published{} // each key's value as last set
	for i, o := range st.ops {
		if o.del {
			m = m.del(o.hash, o.key)
		} else {
			last[o.key] = published{reason: fmt.Sprint(i)}
			m = m.set(o.hash, trieEntry{o.key, last[o.key]})
		}
	}
	if m.Len() != len(st.want) {
		t.Errorf("Len = %d; want %d", m.Len(), len(st.want))
	}
	for k, h := range st.want {
		if got, ok := m.get(h, k); !ok || got != last[k] {
			t.Errorf("get(%q, %#x) = %v, %v; want %v, true", k, h, got, ok, last[k])
		}
	}
	for _, o := range st.ops {
		if _, ok := m.get(o.hash, o.key); ok && st.want[o.key] == 0 {
			t.Errorf("%q still present", o.key)
		}
	}
	for h, d := range st.depth {
		if got := depth(m, h); got != d {
			t.Errorf("path to %#x crosses %d nodes; want %d", h, got, d)
		}
	}
}
