package index

import (
	"runtime"
	"sync/atomic"
)

// shard is one part of the index: an open-addressing table guarded by a
// sequence counter (a seqlock). The single writer (the Index holds wmu)
// makes the counter odd while it changes the shard and even again after;
// a reader reads without locking and retries if the counter moved. Readers
// therefore never block a writer and never take a lock; they only repeat a
// probe that overlapped a write to the same shard.
//
// Every shared field is read and written atomically, so the scheme is
// race-free under Go's memory model (an atomic load is a plain load on
// amd64 and arm64).
type shard struct {
	seq atomic.Uint64
	t   hashTable
	_   [16]byte // keep neighbouring shards' counters on separate cache lines
}

// get returns k's entry (zero when absent), consistent as of one moment.
// It is the walk's inner loop, so it probes the table itself, with the
// counter checks around the probe. The probe is bounded, so a view torn by
// a concurrent write cannot loop forever (the counter then makes it retry).
func (sh *shard) get(k uint64) entry {
	for spins := 0; ; spins++ {
		s1 := sh.seq.Load()
		var e entry
		if k != 0 {
			a := sh.t.arr.Load()
			for i, n := a.home(k), 0; n < len(a.s); i, n = (i+1)&a.mask, n+1 {
				s := &a.s[i]
				key := s.key.Load()
				if key == k {
					if s.meta.Load() == 0 { // page 0 inline, no other page
						e = s.load()
					} else {
						e = sh.t.page0(s)
					}
					break
				}
				if key == 0 {
					break
				}
			}
		} else if sh.t.hasZero.Load() {
			e = sh.t.page0(&sh.t.zero)
		}
		if s1&1 == 0 && sh.seq.Load() == s1 {
			return e
		}
		if spins > 16 {
			runtime.Gosched() // a writer is inside the shard: let it finish
		}
	}
}

// home is the first slot k probes, for Index.touchKeys: loading it ahead
// makes the cache miss of a later get or ref overlap with others. Outside
// the counter's bracket it may be a slot of an array a writer is about to
// replace; only a later probe's result counts.
func (sh *shard) home(k uint64) *slot {
	a := sh.t.arr.Load()
	return &a.s[a.home(k)]
}

// begin and end bracket a writer's change to the shard.
func (sh *shard) begin() { sh.seq.Add(1) }
func (sh *shard) end()   { sh.seq.Add(1) }

// hashTable: linear probing over slots of {key, meta, gpu, cpu}, so a lookup
// touches one slot (usually one cache line) where a Go map touches a
// control word and a slot. Deletion shifts later entries back instead of
// leaving tombstones, so heavy churn (a KV cache evicting and storing all
// day) never lengthens probes. Key 0 is the empty marker; a real key 0
// lives in zero, flagged by hasZero.
type hashTable struct {
	arr     atomic.Pointer[slotArray]
	n       int // entries in arr (excluding key 0); writer only
	zero    slot
	hasZero atomic.Bool
	sets    *extSets // the Index's interned sets of other pages (pages.go)
}

type slotArray struct {
	s     []slot
	mask  uint64 // len(s) - 1
	shift uint   // 64 - log2(len(s))
}

// slot is one key's entry: the holder sets (GPU and CPU) of one page of
// slots inline, and those of its other pages, if any, in an interned
// extSet. meta is the inline page (low 16 bits) and the extSet's size and
// number (above them; 0 for none, see packMeta). Up to 64 holders every key has page 0
// inline and nothing else, so a Lookup reads one slot per key, as it did
// when the holder set was one 64-bit mask.
type slot struct {
	key, meta, gpu, cpu atomic.Uint64
}

func (s *slot) load() entry { return entry{gpu: s.gpu.Load(), cpu: s.cpu.Load()} }

func (s *slot) page() int { return int(s.meta.Load() & 0xffff) }

// tier returns the holder set of tier t.
func (s *slot) tier(t Tier) *atomic.Uint64 {
	if t == CPU {
		return &s.cpu
	}
	return &s.gpu
}

// empty reports whether the inline holder sets are empty (a slot with
// other pages always has a holder inline: see hashTable.normalise).
func (s *slot) empty() bool { return s.gpu.Load()|s.cpu.Load() == 0 }

func (s *slot) copyFrom(o *slot) {
	s.key.Store(o.key.Load())
	s.meta.Store(o.meta.Load())
	s.gpu.Store(o.gpu.Load())
	s.cpu.Store(o.cpu.Load())
}

func (s *slot) clear() {
	s.key.Store(0)
	s.meta.Store(0)
	s.gpu.Store(0)
	s.cpu.Store(0)
}

const minSlots = 16

func newSlotArray(size int) *slotArray {
	return &slotArray{s: make([]slot, size), mask: uint64(size - 1), shift: uint(64 - log2(size))}
}

// init makes t empty; t.sets, when not set before (by the Index, which
// shares its sets among its shards), becomes t's own.
func (t *hashTable) init() {
	t.arr.Store(newSlotArray(minSlots))
	if t.sets == nil {
		t.sets = new(extSets)
	}
}

// home is the slot a key probes first (Fibonacci hashing of the key, so
// keys that are not uniformly spread still scatter).
func (a *slotArray) home(k uint64) uint64 {
	return (k * 0x9E3779B97F4A7C15) >> (a.shift & 63) // the mask spares Go's shift-by-64 check
}

func (t *hashTable) len() int {
	if t.hasZero.Load() {
		return t.n + 1
	}
	return t.n
}

// ref returns k's slot, inserting an empty one when absent and insert is
// true (the caller must then set a holder bit, or remove k again: a slot
// with a key always has a holder, so an empty one was just inserted). It
// returns nil when k is absent and insert is false. Writer only, inside
// begin/end.
func (t *hashTable) ref(k uint64, insert bool) *slot {
	if k == 0 {
		if !t.hasZero.Load() {
			if !insert {
				return nil
			}
			t.zero.clear()
			t.hasZero.Store(true)
		}
		return &t.zero
	}
	a := t.arr.Load()
	if insert && (t.n+1)*4 > len(a.s)*3 {
		a = t.resize(len(a.s) * 2)
	}
	mask := uint64(len(a.s) - 1)
	for i := a.home(k); ; i = (i + 1) & mask {
		s := &a.s[i]
		switch s.key.Load() {
		case k:
			return s
		case 0:
			if !insert {
				return nil
			}
			s.key.Store(k) // an empty slot's meta and holder sets are already zero

			t.n++
			return s
		}
	}
}

// remove deletes k, shifting back the entries that probed past it. Writer
// only, inside begin/end.
func (t *hashTable) remove(k uint64) {
	if k == 0 {
		t.hasZero.Store(false)
		t.zero.clear()
		return
	}
	a := t.arr.Load()
	mask := uint64(len(a.s) - 1)
	i := a.home(k)
	for {
		key := a.s[i].key.Load()
		if key == k {
			break
		}
		if key == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move each later entry of the cluster into
	// the hole when its home does not lie cyclically in (hole, its slot].
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		key := a.s[j].key.Load()
		if key == 0 {
			break
		}
		if h := a.home(key); (j-h)&mask >= (j-i)&mask {
			a.s[i].copyFrom(&a.s[j])
			i = j
		}
	}
	a.s[i].clear()
	t.n--
	if len(a.s) > minSlots && t.n*8 < len(a.s) {
		t.resize(len(a.s) / 2)
	}
}

// resize rehashes into a new array and publishes it. Readers of the old
// array see it unchanged; the shard's counter makes them retry anyway.
func (t *hashTable) resize(size int) *slotArray {
	old := t.arr.Load()
	a := newSlotArray(size)
	mask := uint64(size - 1)
	for j := range old.s {
		o := &old.s[j]
		key := o.key.Load()
		if key == 0 {
			continue
		}
		i := a.home(key)
		for a.s[i].key.Load() != 0 {
			i = (i + 1) & mask
		}
		a.s[i].copyFrom(o)
	}
	t.arr.Store(a)
	return a
}

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// sweep clears dead from every entry and removes the entries it empties,
// returning how many it removed. Writer only, inside begin/end.
func (t *hashTable) sweep(dead *slotSet) int {
	var empty []uint64
	clearSlot := func(s *slot, key uint64) {
		if t.clearDead(s, dead) {
			empty = append(empty, key)
		}
	}
	if t.hasZero.Load() {
		clearSlot(&t.zero, 0)
	}
	a := t.arr.Load()
	for i := range a.s {
		if key := a.s[i].key.Load(); key != 0 {
			clearSlot(&a.s[i], key)
		}
	}
	for _, k := range empty {
		t.remove(k)
	}
	return len(empty)
}
