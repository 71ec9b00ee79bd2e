package ingest

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// What the Sink publishes for the request path (Synced, Refused) is an
// immutable map, replaced at the end of each update. Copying a map of every
// replica per update made an update's cost grow with the fleet (0.3 M
// block events per second at 4,096 replicas against 8 M at 64); stateMap
// is a hash array mapped trie instead, so a new version shares all but the
// changed keys' paths with the one before: a change costs O(log₃₂ n) node
// copies, a lookup as many loads, and a version a reader holds never moves.

// published is a replica's state as the request path sees it: synced (its
// driver's session holds its KV state, so it is exact), or refused for lack
// of room in the index, with the reason (approx).
type published struct {
	refused bool
	reason  string
	// untrusted is why its driver cannot key its blocks (kvwire's
	// Replica.Approx): it routes approx, though a session holds it.
	untrusted string
	// blockSize is the block size the replica's engine reports in its
	// events (0: none yet): it decides the size its keys are cut at.
	blockSize int
}

// stateMap maps replica ids to their published state. It is a value: Set
// and Delete return a new map and leave the receiver as it was. The zero
// value is empty.
type stateMap struct {
	root *trieNode
	n    int
}

// trieSeed hashes every stateMap's keys, so that versions share nodes.
var trieSeed = maphash.MakeSeed()

const (
	trieBits = 5 // hash bits per level: 32 slots a node
	trieMask = 1<<trieBits - 1
)

// trieNode holds the occupied ones of its 32 slots, in slot order: bitmap
// says which.
type trieNode struct {
	bitmap uint32
	kids   []trieKid
}

// trieKid is a slot's content: a subtrie, or the entries of one 64-bit
// hash (more than one only when two ids' hashes collide).
type trieKid struct {
	sub  *trieNode
	hash uint64
	leaf []trieEntry
}

type trieEntry struct {
	key string
	val published
}

// slot returns the bit of h's slot in a node at shift, and its position
// among n's kids.
func slot(bitmap uint32, h uint64, shift uint) (uint32, int) {
	bit := uint32(1) << ((h >> shift) & trieMask)
	return bit, bits.OnesCount32(bitmap & (bit - 1))
}

// Len is the number of keys.
func (m stateMap) Len() int { return m.n }

// Get returns key's value, false when key is absent.
func (m stateMap) Get(key string) (published, bool) { return m.get(hashKey(key), key) }

// Set returns m with key mapped to v.
func (m stateMap) Set(key string, v published) stateMap {
	return m.set(hashKey(key), trieEntry{key, v})
}

// Delete returns m without key.
func (m stateMap) Delete(key string) stateMap { return m.del(hashKey(key), key) }

func hashKey(key string) uint64 { return maphash.String(trieSeed, key) }

// get, set and del are Get, Set and Delete of a key whose hash is h (the
// tests choose hashes that collide).
func (m stateMap) get(h uint64, key string) (published, bool) {
	for n, shift := m.root, uint(0); n != nil; shift += trieBits {
		bit, i := slot(n.bitmap, h, shift)
		if n.bitmap&bit == 0 {
			break
		}
		k := &n.kids[i]
		if k.sub != nil {
			n = k.sub
			continue
		}
		if k.hash == h {
			for _, e := range k.leaf {
				if e.key == key {
					return e.val, true
				}
			}
		}
		break
	}
	return published{}, false
}

func (m stateMap) set(h uint64, e trieEntry) stateMap {
	root, added := setIn(m.root, 0, h, e)
	m.root = root
	if added {
		m.n++
	}
	return m
}

// setIn returns a copy of n (nil: empty) with e set, and whether e.key is
// new. Two distinct hashes differ in some 5-bit chunk at or below shift
// 60, so the trie is at most 13 levels deep.
func setIn(n *trieNode, shift uint, h uint64, e trieEntry) (*trieNode, bool) {
	if n == nil {
		n = &trieNode{}
	}
	bit, i := slot(n.bitmap, h, shift)
	if n.bitmap&bit == 0 {
		kids := make([]trieKid, 0, len(n.kids)+1)
		kids = append(append(append(kids, n.kids[:i]...), trieKid{hash: h, leaf: []trieEntry{e}}), n.kids[i:]...)
		return &trieNode{bitmap: n.bitmap | bit, kids: kids}, true
	}
	out := &trieNode{bitmap: n.bitmap, kids: slices.Clone(n.kids)}
	k := &out.kids[i]
	switch {
	case k.sub != nil:
		sub, added := setIn(k.sub, shift+trieBits, h, e)
		k.sub = sub
		return out, added
	case k.hash == h:
		leaf := slices.Clone(k.leaf)
		k.leaf = leaf
		for j := range leaf {
			if leaf[j].key == e.key {
				leaf[j].val = e.val
				return out, false
			}
		}
		k.leaf = append(leaf, e)
		return out, true
	default:
		// Another hash holds the slot: both move one level down.
		down, _ := slot(0, k.hash, shift+trieBits)
		sub, _ := setIn(&trieNode{bitmap: down, kids: []trieKid{*k}}, shift+trieBits, h, e)
		*k = trieKid{sub: sub}
		return out, true
	}
}

func (m stateMap) del(h uint64, key string) stateMap {
	root, removed := delIn(m.root, 0, h, key)
	if removed {
		m.root = root
		m.n--
	}
	return m
}

// delIn returns a copy of n without key (nil when nothing is left), and
// whether key was there. A subtrie left with a single entry's slot is
// folded into its parent's slot, so the trie stays as shallow as its keys
// need after deletions.
func delIn(n *trieNode, shift uint, h uint64, key string) (*trieNode, bool) {
	if n == nil {
		return nil, false
	}
	bit, i := slot(n.bitmap, h, shift)
	if n.bitmap&bit == 0 {
		return n, false
	}
	k := n.kids[i]
	var repl trieKid
	switch {
	case k.sub != nil:
		sub, removed := delIn(k.sub, shift+trieBits, h, key)
		if !removed {
			return n, false
		}
		switch {
		case sub == nil:
		case len(sub.kids) == 1 && sub.kids[0].sub == nil:
			repl = sub.kids[0]
		default:
			repl = trieKid{sub: sub}
		}
	case k.hash == h:
		j := slices.IndexFunc(k.leaf, func(e trieEntry) bool { return e.key == key })
		if j < 0 {
			return n, false
		}
		if len(k.leaf) > 1 {
			repl = trieKid{hash: h, leaf: slices.Delete(slices.Clone(k.leaf), j, j+1)}
		}
	default:
		return n, false
	}
	if repl.sub == nil && repl.leaf == nil {
		if len(n.kids) == 1 {
			return nil, true
		}
		kids := make([]trieKid, 0, len(n.kids)-1)
		kids = append(append(kids, n.kids[:i]...), n.kids[i+1:]...)
		return &trieNode{bitmap: n.bitmap &^ bit, kids: kids}, true
	}
	out := &trieNode{bitmap: n.bitmap, kids: slices.Clone(n.kids)}
	out.kids[i] = repl
	return out, true
}
