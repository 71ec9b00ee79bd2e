package index

// table of one shard: open addressing with linear probing over slots of
// {key, gpu, cpu}, so a lookup touches one slot (usually one cache line)
// where a Go map touches a control word and a slot. Deletion shifts later
// entries back instead of leaving tombstones, so heavy churn (a KV cache
// evicting and storing all day) never lengthens probes. Key 0 is the empty
// marker; a real key 0 lives in zero/hasZero.
//
// Callers hold the shard's lock: RLock for get, Lock for the rest.
type hashTable struct {
	slots   []slot
	shift   uint // 64 - log2(len(slots))
	n       int  // entries in slots (excluding key 0)
	zero    entry
	hasZero bool
}

type slot struct {
	key uint64
	e   entry
}

const minSlots = 16

func newHashTable() hashTable {
	return hashTable{slots: make([]slot, minSlots), shift: 64 - 4}
}

// home is the slot a key probes first (Fibonacci hashing of the key, so
// keys that are not uniformly spread still scatter).
func (t *hashTable) home(k uint64) uint64 {
	return (k * 0x9E3779B97F4A7C15) >> t.shift
}

func (t *hashTable) len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}

// get returns k's entry and whether it is present.
func (t *hashTable) get(k uint64) (entry, bool) {
	if k == 0 {
		return t.zero, t.hasZero
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.e, true
		}
		if s.key == 0 {
			return entry{}, false
		}
	}
}

// ref returns a pointer to k's entry, inserting an empty one when absent
// and insert is true (the caller must then set a bit or call remove).
// It returns nil when k is absent and insert is false.
func (t *hashTable) ref(k uint64, insert bool) (e *entry, added bool) {
	if k == 0 {
		if !t.hasZero {
			if !insert {
				return nil, false
			}
			t.hasZero, t.zero = true, entry{}
			return &t.zero, true
		}
		return &t.zero, false
	}
	if insert && (t.n+1)*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return &s.e, false
		}
		if s.key == 0 {
			if !insert {
				return nil, false
			}
			s.key, s.e = k, entry{}
			t.n++
			return &s.e, true
		}
	}
}

// remove deletes k, shifting back the entries that probed past it.
func (t *hashTable) remove(k uint64) {
	if k == 0 {
		t.hasZero, t.zero = false, entry{}
		return
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(k)
	for {
		if t.slots[i].key == k {
			break
		}
		if t.slots[i].key == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move each later entry of the cluster into
	// the hole when its home does not lie cyclically in (hole, its slot].
	for j := (i + 1) & mask; t.slots[j].key != 0; j = (j + 1) & mask {
		h := t.home(t.slots[j].key)
		if (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
	if len(t.slots) > minSlots && t.n*8 < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

func (t *hashTable) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	t.shift = uint(64 - log2(size))
	mask := uint64(size - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := t.home(s.key)
		for t.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// sweep clears mask from every entry and removes the entries it empties,
// returning how many it removed.
func (t *hashTable) sweep(mask uint64) int {
	var empty []uint64
	if t.hasZero {
		t.zero.gpu &^= mask
		t.zero.cpu &^= mask
		if t.zero.gpu|t.zero.cpu == 0 {
			empty = append(empty, 0)
		}
	}
	for i := range t.slots {
		s := &t.slots[i]
		if s.key == 0 || (s.e.gpu|s.e.cpu)&mask == 0 {
			continue
		}
		s.e.gpu &^= mask
		s.e.cpu &^= mask
		if s.e.gpu|s.e.cpu == 0 {
			empty = append(empty, s.key)
		}
	}
	for _, k := range empty {
		t.remove(k)
	}
	return len(empty)
}
