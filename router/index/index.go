package index

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
)

// MaxHolders is the number of (replica, rank) holders one Index can track:
// 64 pages of 64 slots. A holder beyond it gets ErrFull; the ingest then
// degrades that replica to approximate routing and says why.
const MaxHolders = 4096

const shardCount = 256

// Tier is where a block is cached; a GPU hit is worth more than a CPU one.
type Tier uint8

// Tiers. vLLM's BlockStored medium "GPU" is GPU; "CPU" (offloaded) is CPU.
const (
	GPU Tier = iota
	CPU
)

func (t Tier) String() string {
	switch t {
	case GPU:
		return "gpu"
	case CPU:
		return "cpu"
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// ErrFull is returned when a new holder would exceed MaxHolders.
var ErrFull = errors.New("index holds the maximum number of replica ranks")

// ErrKeyCap is returned (after the rest of the call was applied) when keys
// were dropped because the index holds Options.MaxKeys keys: the caller
// must not treat the replica's state as complete.
var ErrKeyCap = errors.New("index holds its maximum number of keys")

// Blocks is the set of keys one rank of a replica holds on one tier.
type Blocks struct {
	Rank int
	Tier Tier
	Keys []uint64
}

// Change is the net change to one rank and tier of a replica.
type Change struct {
	Rank     int
	Tier     Tier
	Add, Del []uint64
}

// Options bound an Index.
type Options struct {
	// MaxKeys caps the number of distinct keys (0: unbounded). Set it to the
	// fleet's advertised KV capacity in blocks plus slack.
	MaxKeys int
	// OnOverflow is called (from the writer) when a store is first dropped
	// for lack of room, and again only after the index has shrunk back
	// below MaxKeys. It must not call back into the Index.
	OnOverflow func(keys, max int)
}

// Stats are the Index's sizes, cheap to read for metrics.
type Stats struct {
	Keys     int    // distinct keys held (including keys of dead holders not yet swept)
	Holders  int    // live (replica, rank) holders
	Rejected uint64 // stores dropped because MaxKeys was reached
	// Unswept is the number of (key, holder) entries of removed holders
	// still in the map: readers no longer see them, and a sweep frees them
	// once they reach a sixteenth of the live entries (see Remove).
	Unswept int
}

// entry is the value per key: one holder bit set per tier.
type entry struct {
	gpu, cpu uint64
}

// Index maps block keys to the replica ranks holding them. The zero value is
// not usable; call New.
type Index struct {
	opts   Options
	shards [shardCount]shard
	tab    atomic.Pointer[table]

	keys     atomic.Int64
	rejected atomic.Uint64
	groups   groupCache // LookupReplicas' candidate lists
	sets     extSets    // keys' holder sets beyond their inline page

	// Writer state, under wmu.
	wmu        sync.Mutex
	retired    []*table // replaced tables that may still have readers
	used       slotSet  // slots allocated (live, dead but unswept, or being built)
	slots      slotMap  // live holder -> slot
	counts     [MaxHolders][2]int
	entries    int     // (key, holder) entries of live holders
	dead       slotSet // removed holders' slots, not swept yet
	unswept    int     // their entries
	overflowed bool
	// cands are, while the index is full, the keys each slot may hold
	// (inplace.go); nil otherwise.
	cands *[MaxHolders][]uint64
	sink  uint64 // results of touch, kept so the loads stay
}

// readGroup is how many keys a Lookup touches together, a group ahead of
// the keys it reads (see walk.scan).
const readGroup = 32

// New returns an empty Index.
func New(opts Options) *Index {
	ix := &Index{opts: opts, slots: slotMap{}}
	for i := range ix.shards {
		ix.shards[i].t.sets = &ix.sets
		ix.shards[i].t.init()
	}
	ix.tab.Store(&table{live: make([]uint64, 1), holders: make(holderPages, 1), group: make([]int32, 64)})
	return ix
}

func (ix *Index) shard(k uint64) *shard {
	return &ix.shards[(k^k>>32)&(shardCount-1)]
}

// Update applies net changes for one replica: per change, deletions first,
// then additions. It creates holders as needed.
func (ix *Index) Update(replica string, changes []Change) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	dropped := 0
	for _, c := range changes {
		if err := checkTier(c.Tier); err != nil {
			return fmt.Errorf("update %s rank %d: %w", replica, c.Rank, err)
		}
		h := holder{replica, c.Rank}
		slot, ok := ix.slots.get(h)
		if !ok {
			if len(c.Add) == 0 {
				continue // deleting from an unknown holder changes nothing
			}
			var err error
			if slot, err = ix.alloc(); err != nil {
				return fmt.Errorf("update %s rank %d: %w", replica, c.Rank, err)
			}
			ix.slots.set(h, slot)
			ix.publish(func(live *slotSet, name func(int, holder)) { live.add(slot); name(slot, h) })
		}
		ix.del(slot, c.Tier, c.Del)
		dropped += ix.add(slot, c.Tier, c.Add)
	}
	return keyCapErr("update", replica, dropped)
}

func keyCapErr(op, replica string, dropped int) error {
	if dropped == 0 {
		return nil
	}
	return fmt.Errorf("%s %s: %d keys dropped: %w", op, replica, dropped, ErrKeyCap)
}

// Replace makes blocks the complete state of replica (a snapshot, or a reset
// followed by additions). While free slots remain, readers see either the
// old state or the new one, never a mixture: the new holders are filled
// while invisible, then swapped in with the old ones retired in one step.
// The retired slots' bits are swept as Remove's are, once removed holders'
// entries reach a sixteenth of the live ones, so a fleet resending every
// snapshot pays a few sweeps of the map, not one per replica. When no slot
// is free, each of the replica's ranks is replaced in its own slot instead
// (a rank the replica did not hold before still needs one): readers then
// see the old and new keys together until the stale ones are cleared,
// which still never credits a key the replica holds in neither state. The
// stale keys are found among the keys the slot may hold (inplace.go), so
// this costs the replica's keys too, not a pass over the map.
//
// At the key cap the new keys are added before the old ones leave, so the
// two states together may not fit where the new one alone does: the keys
// cut then are stored again once the old state is out, and only those that
// still do not fit count as rejected.
func (ix *Index) Replace(replica string, blocks []Blocks) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ranks := map[holder]bool{}
	for _, b := range blocks {
		if err := checkTier(b.Tier); err != nil {
			return fmt.Errorf("replace %s rank %d: %w", replica, b.Rank, err)
		}
		ranks[holder{replica, b.Rank}] = true
	}
	need := 0
	for h := range ranks {
		if _, ok := ix.slots.get(h); !ok {
			need++ // in place, if it must
		}
	}
	if ix.free() < len(ranks) && !ix.dead.empty() {
		ix.sweepDead()
	}
	if ix.free() < len(ranks) {
		if ix.free() < need {
			return fmt.Errorf("replace %s: %d new ranks: %w", replica, need, ErrFull)
		}
		return ix.replaceInPlace(replica, blocks)
	}
	fresh := map[holder]int{}
	var cut []cutKeys
	for _, b := range blocks {
		h := holder{replica, b.Rank}
		slot, ok := fresh[h]
		if !ok {
			slot, _ = ix.alloc() // free() >= len(ranks)
			fresh[h] = slot
		}
		cut = ix.addCut(slot, b.Tier, b.Keys, cut)
	}
	old, _ := ix.retire(replica)
	for h, s := range fresh {
		ix.slots.set(h, s)
	}
	ix.publish(func(live *slotSet, name func(int, holder)) {
		live.andNot(&old)
		for h, s := range fresh {
			live.add(s)
			name(s, h)
		}
	})
	ix.bury(&old)
	if len(cut) > 0 {
		ix.sweepDead() // the old state's keys make room for the cut ones
	}
	return keyCapErr("replace", replica, ix.readd(cut))
}

// cutKeys are keys a Replace could not store at the key cap before the
// replica's old state left.
type cutKeys struct {
	slot int
	tier Tier
	keys []uint64
}

// addCut is add for Replace: keys the cap refuses are appended to cut,
// not counted as rejected (readd counts those that stay out).
func (ix *Index) addCut(slot int, t Tier, keys []uint64, cut []cutKeys) []cutKeys {
	var c []uint64
	ix.store(slot, t, keys, &c)
	if len(c) > 0 {
		cut = append(cut, cutKeys{slot, t, c})
	}
	return cut
}

// readd stores the cut keys again and returns how many the cap still
// refused (counted as rejected).
func (ix *Index) readd(cut []cutKeys) int {
	dropped := 0
	for _, c := range cut {
		dropped += ix.add(c.slot, c.tier, c.keys)
	}
	return dropped
}

// bury makes retired slots dead: their entries leave the live count and
// are swept out when Remove's rule says (see Remove).
func (ix *Index) bury(old *slotSet) {
	if old.empty() {
		return
	}
	ix.dead.or(old)
	ix.unswept += ix.forget(old)
	if ix.keys.Load() <= smallIndex || ix.unswept*16 >= ix.entries {
		ix.sweepDead()
	}
}

// forget drops the counts of retired slots and returns their entries.
func (ix *Index) forget(old *slotSet) int {
	total := 0
	for p, w := range old {
		for ; w != 0; w &= w - 1 {
			s := p<<6 | bits.TrailingZeros64(w)
			n := ix.counts[s][GPU] + ix.counts[s][CPU]
			total += n
			ix.counts[s] = [2]int{}
		}
	}
	ix.entries -= total
	return total
}

// replaceInPlace is Replace for an index without a free slot per rank: each
// rank keeps its slot (or takes a free one), gains its new keys, then loses
// the keys it no longer holds, found among its candidates (inplace.go);
// ranks the replica no longer has are removed.
func (ix *Index) replaceInPlace(replica string, blocks []Blocks) error {
	keep := map[int]map[uint64][2]bool{} // slot -> key -> tiers held
	var cut []cutKeys
	for _, b := range blocks {
		h := holder{replica, b.Rank}
		slot, ok := ix.slots.get(h)
		if !ok {
			var err error
			if slot, err = ix.alloc(); err != nil {
				return fmt.Errorf("replace %s rank %d: %w", replica, b.Rank, err)
			}
			ix.slots.set(h, slot)
			ix.publish(func(live *slotSet, name func(int, holder)) { live.add(slot); name(slot, h) })
		}
		cut = ix.addCut(slot, b.Tier, b.Keys, cut)
		m := keep[slot]
		if m == nil {
			m = map[uint64][2]bool{}
			keep[slot] = m
		}
		for _, k := range b.Keys {
			t := m[k]
			t[b.Tier] = true
			m[k] = t
		}
	}
	var gone slotSet
	for rank, s := range ix.slots[replica] {
		if keep[s] == nil {
			gone.add(s)
			ix.slots.del(holder{replica, rank})
		}
	}
	if !gone.empty() {
		ix.publish(func(live *slotSet, _ func(int, holder)) { live.andNot(&gone) })
		ix.sweep(&gone)
	}
	if ix.cands == nil {
		ix.trackCandidates() // once, while the index stays full
	}
	for s, m := range keep {
		ix.dropStale(s, m)
	}
	return keyCapErr("replace", replica, ix.readd(cut))
}

// Room reports whether a holder the index refused could fit now: a slot
// is free (or awaits a sweep), and the keys are below a fifteen-sixteenths
// of MaxKeys (so a refused replica is not let in only to be refused again
// at once). The ingest asks for refused replicas' snapshots when it holds.
func (ix *Index) Room() bool {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	max := int64(ix.opts.MaxKeys)
	return ix.free()+ix.dead.count() > 0 && (max == 0 || ix.keys.Load()-int64(ix.unswept) < max-max/16)
}

// FreeHolders is the number of holders the index can still take.
func (ix *Index) FreeHolders() int {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.free() + ix.dead.count()
}

// free is the number of slots neither live nor awaiting a sweep.
func (ix *Index) free() int { return MaxHolders - ix.used.count() }

// Remove drops every rank of replica. Readers stop seeing it at once; its
// entries are swept out of the map when the removed holders' entries reach
// a sixteenth of the live ones (or the index is small, or a slot or a key
// is needed), so that a fleet losing many replicas at once pays a few
// sweeps of the map instead of one per replica.
func (ix *Index) Remove(replica string) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	old, any := ix.retire(replica)
	if !any {
		return
	}
	ix.publish(func(live *slotSet, _ func(int, holder)) { live.andNot(&old) })
	ix.bury(&old)
}

// smallIndex is the size up to which Remove sweeps at once: a sweep of so
// few keys costs less than keeping their memory.
const smallIndex = 1 << 16

// sweepDead sweeps the removed holders' slots.
func (ix *Index) sweepDead() {
	d := ix.dead
	ix.dead, ix.unswept = slotSet{}, 0
	ix.sweep(&d)
}

// SetMaxKeys changes the key cap, e.g. when the fleet's advertised KV
// capacity (vllm:cache_config_info) becomes known or changes; 0 removes it.
// Keys already held are kept; new ones are refused until the index shrinks.
func (ix *Index) SetMaxKeys(n int) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.opts.MaxKeys = max(n, 0)
	if n == 0 || ix.keys.Load() < int64(n) {
		ix.overflowed = false
	}
}

// Stats returns the current sizes.
func (ix *Index) Stats() Stats {
	ix.wmu.Lock()
	unswept := ix.unswept
	ix.wmu.Unlock()
	return Stats{
		Keys:     int(ix.keys.Load()),
		Holders:  ix.tab.Load().count,
		Rejected: ix.rejected.Load(),
		Unswept:  unswept,
	}
}

// ReplicaBlocks returns how many keys replica holds per tier, summed over its
// ranks, for the admin API.
func (ix *Index) ReplicaBlocks(replica string) (gpu, cpu int) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	for _, s := range ix.slots[replica] {
		gpu += ix.counts[s][GPU]
		cpu += ix.counts[s][CPU]
	}
	return gpu, cpu
}

func checkTier(t Tier) error {
	if t != GPU && t != CPU {
		return fmt.Errorf("unknown tier %d", t)
	}
	return nil
}

// writeGroup is how many keys add and del touch before changing any. Each
// change takes locked instructions (the shard's counter, the atomic
// stores), and a locked instruction waits for every earlier load: touching
// keys one by one ahead of the change would serialise their cache misses,
// while touching a group lets the misses of the whole group overlap.
const writeGroup = 32

// touchGroup loads the home slot of each key, so later probes hit cache.
func (ix *Index) touchGroup(keys []uint64) { ix.sink += ix.touchKeys(keys) }

// touchKeys loads the home slot of each key; the sum only keeps the loads
// from being dropped. It finds a batch's slots first (through each shard's
// slot array, whose lines stay cached) and only then loads them: a loop
// doing both per key made each slot's load wait behind its own address
// chain, and the misses of a batch overlapped less
// (BenchmarkRouteDecision/rotate was 11-21% slower at p50; with the
// prompt's slots cached, no difference).
func (ix *Index) touchKeys(keys []uint64) uint64 {
	var sum uint64
	var slots [touchBatch]*slot
	for len(keys) > 0 {
		g := keys[:min(len(keys), touchBatch)]
		keys = keys[len(g):]
		for i, k := range g {
			slots[i] = ix.shard(k).home(k)
		}
		for _, s := range slots[:len(g)] {
			sum += s.key.Load()
		}
	}
	return sum
}

// touchBatch bounds touchKeys' batch; readGroup and writeGroup fit in one.
const touchBatch = 32

// change runs fn on each key inside its shard's write bracket, touching
// the keys a group at a time first (see writeGroup). fn must not call out
// of the Index: readers of the shard retry until it returns.
func (ix *Index) change(keys []uint64, fn func(sh *shard, k uint64)) {
	for len(keys) > 0 {
		g := keys[:min(len(keys), writeGroup)]
		keys = keys[len(g):]
		ix.touchGroup(g)
		for _, k := range g {
			sh := ix.shard(k)
			sh.begin()
			fn(sh, k)
			sh.end()
		}
	}
}

// add stores keys for slot hs and returns how many it dropped at MaxKeys.
func (ix *Index) add(hs int, t Tier, keys []uint64) int {
	return ix.store(hs, t, keys, nil)
}

// store stores keys for slot hs and returns how many it dropped at
// MaxKeys: counted as rejected, or (cut not nil) appended to *cut for the
// caller to try again.
func (ix *Index) store(hs int, t Tier, keys []uint64, cut *[]uint64) int {
	max := int64(ix.opts.MaxKeys)
	if max > 0 && ix.keys.Load()+int64(len(keys)) >= max && !ix.dead.empty() {
		ix.sweepDead() // the dead holders' keys make room first
	}
	var added int64
	rejected := 0
	ix.change(keys, func(sh *shard, k uint64) {
		var s *slot
		if max > 0 && ix.keys.Load()+added >= max {
			if s = sh.t.ref(k, false); s == nil {
				rejected++
				if cut != nil {
					*cut = append(*cut, k)
				}
				return
			}
		} else {
			s = sh.t.ref(k, true)
		}
		fresh := s.empty() && s.meta.Load() == 0 // just inserted
		if sh.t.setBit(s, hs, t) {
			ix.counts[hs][t]++
			ix.entries++
			if fresh {
				added++
			}
		}
	})
	ix.keys.Add(added)
	ix.noteStored(hs, keys)
	if cut == nil {
		for range rejected {
			ix.reject()
		}
	}
	return rejected
}

func (ix *Index) del(hs int, t Tier, keys []uint64) {
	removed := 0
	ix.change(keys, func(sh *shard, k uint64) {
		if s := sh.t.ref(k, false); s != nil {
			if was, empty := sh.t.clearBit(s, hs, t); was {
				ix.counts[hs][t]--
				ix.entries--
				if empty {
					sh.t.remove(k)
					removed++
				}
			}
		}
	})
	ix.dropped(removed)
}

// dropped accounts for n keys that lost their last holder.
func (ix *Index) dropped(n int) {
	if n > 0 && ix.keys.Add(-int64(n)) < int64(ix.opts.MaxKeys) {
		ix.overflowed = false
	}
}

func (ix *Index) reject() {
	ix.rejected.Add(1)
	if !ix.overflowed {
		ix.overflowed = true
		if ix.opts.OnOverflow != nil {
			ix.opts.OnOverflow(int(ix.keys.Load()), ix.opts.MaxKeys)
		}
	}
}

// sweep clears the given slots' bits from every key, one shard at a time,
// then frees the slots. The slots must already be dead in the published
// table; sweep first waits for readers of older tables, so no Lookup sees a
// half-swept holder as live.
func (ix *Index) sweep(dead *slotSet) {
	if dead.empty() {
		return
	}
	ix.quiesce()
	for i := range ix.shards {
		sh := &ix.shards[i]
		sh.begin()
		n := sh.t.sweep(dead)
		sh.end()
		ix.dropped(n)
	}
	ix.used.andNot(dead)
	ix.untrackCandidates()
}
