package index

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestHashTableMatchesMap drives the table and a Go map with the same random
// inserts, updates and removals (including key 0 and keys crowded into few
// home slots) and checks they always agree.
func TestHashTableMatchesMap(t *testing.T) {
	for _, keySpace := range []uint64{8, 1000, 1 << 62} {
		r := rand.New(rand.NewPCG(keySpace, 1))
		var sh shard // read through the reader's probe (shard.get)
		sh.t.init()
		tab := &sh.t
		ref := map[uint64]entry{}
		key := func() uint64 {
			k := r.Uint64N(keySpace)
			if keySpace == 1000 {
				k <<= 54 // same low bits: the home slot comes from the high bits only
			}
			return k
		}
		for step := 0; step < 60_000; step++ {
			k := key()
			switch op := r.IntN(10); {
			case op < 5: // set a bit
				before := tab.len()
				e := tab.ref(k, true)
				_, had := ref[k]
				if added := tab.len() > before; added == had {
					t.Fatalf("space %d step %d: ref(%d) added=%v but reference had=%v", keySpace, step, k, added, had)
				}
				bit := uint64(1) << r.IntN(64)
				e.gpu.Or(bit)
				v := ref[k]
				v.gpu |= bit
				ref[k] = v
			case op < 8: // remove
				tab.remove(k)
				delete(ref, k)
			default: // sweep a random slot mask now and then
				if r.IntN(1000) == 0 {
					mask := r.Uint64()
					tab.sweep(&slotSet{mask})
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
			if step%4999 == 0 || step == 59_999 {
				if tab.len() != len(ref) {
					t.Fatalf("space %d step %d: table holds %d keys; reference %d", keySpace, step, tab.len(), len(ref))
				}
				for rk, v := range ref {
					if got := sh.get(rk); got != v {
						t.Fatalf("space %d step %d: get(%d) = %v; want %v", keySpace, step, rk, got, v)
					}
				}
			}
			if _, ok := ref[k]; !ok {
				if sh.get(k) != (entry{}) || tab.ref(k, false) != nil {
					t.Fatalf("space %d step %d: removed key %d still found", keySpace, step, k)
				}
			}
		}
	}
}

// TestShardSeqlock makes the writer move a key back and forth (remove it,
// put a colliding key at its home slot, re-insert it behind that one, then
// remove the collider so it shifts home) while readers check that it always
// reads whole or absent, never torn mid-move.
func TestShardSeqlock(t *testing.T) {
	var sh shard
	sh.t.init()
	const s = uint64(12345)
	a := sh.t.arr.Load()
	c := s + 1
	for a.home(c) != a.home(s) {
		c++
	}
	put := func(k, gpu, cpu uint64) {
		sh.begin()
		e := sh.t.ref(k, true)
		e.gpu.Store(gpu)
		e.cpu.Store(cpu)
		sh.end()
	}
	del := func(k uint64) {
		sh.begin()
		sh.t.remove(k)
		sh.end()
	}
	want := entry{gpu: 0xAAAA, cpu: 1}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 1)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if e := sh.get(s); e != want && e != (entry{}) {
					select {
					case errs <- fmt.Sprintf("key read torn as %+v", e):
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < 50_000; i++ {
		del(s)
		put(c, 0x5555, 0)
		put(s, want.gpu, want.cpu) // displaced behind c
		del(c)                     // s shifts back to its home slot
		if i%256 == 0 {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case e := <-errs:
		t.Error(e)
	default:
	}
}
