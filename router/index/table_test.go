package index

import (
	"math/rand/v2"
	"testing"
)

// TestHashTableMatchesMap drives the table and a Go map with the same random
// inserts, updates and removals (including key 0 and keys crowded into few
// home slots) and checks they always agree.
func TestHashTableMatchesMap(t *testing.T) {
	for _, keySpace := range []uint64{8, 1000, 1 << 62} {
		r := rand.New(rand.NewPCG(keySpace, 1))
		tab := newHashTable()
		ref := map[uint64]entry{}
		key := func() uint64 {
			k := r.Uint64N(keySpace)
			if keySpace == 1000 {
				k <<= 54 // same low bits: the home slot comes from the high bits only
			}
			return k
		}
		for step := 0; step < 200_000; step++ {
			k := key()
			switch op := r.IntN(10); {
			case op < 5: // set a bit
				e, added := tab.ref(k, true)
				_, had := ref[k]
				if added == had {
					t.Fatalf("space %d step %d: ref(%d) added=%v but reference had=%v", keySpace, step, k, added, had)
				}
				bit := uint64(1) << r.IntN(64)
				e.gpu |= bit
				v := ref[k]
				v.gpu |= bit
				ref[k] = v
			case op < 8: // remove
				tab.remove(k)
				delete(ref, k)
			default: // sweep a random slot mask now and then
				if r.IntN(1000) == 0 {
					mask := r.Uint64()
					tab.sweep(mask)
					for rk, v := range ref {
						v.gpu &^= mask
						v.cpu &^= mask
						if v.gpu|v.cpu == 0 {
							delete(ref, rk)
						} else {
							ref[rk] = v
						}
					}
				}
			}
			if step%997 == 0 || step == 199_999 {
				if tab.len() != len(ref) {
					t.Fatalf("space %d step %d: table holds %d keys; reference %d", keySpace, step, tab.len(), len(ref))
				}
				for rk, v := range ref {
					if got, ok := tab.get(rk); !ok || got != v {
						t.Fatalf("space %d step %d: get(%d) = %v, %v; want %v", keySpace, step, rk, got, ok, v)
					}
				}
			}
			if _, ok := ref[k]; !ok {
				if _, ok := tab.get(k); ok {
					t.Fatalf("space %d step %d: removed key %d still found", keySpace, step, k)
				}
			}
		}
	}
}
