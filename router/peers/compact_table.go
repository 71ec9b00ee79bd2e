package peers

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/llmgw/llmgw/router/load"
)

// putCompact takes a compact message from ip, as put takes a JSON one.
// Its names extend (or restate) the directory held for the sender; a
// message that extends one the table does not hold is errDirectory. The
// message is checked whole before the table changes.
func (t *Table) putCompact(m compactMessage, ip netip.Addr) (bool, error) {
	if m.Router == t.self {
		t.own.Add(1)
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.admitLocked(m.Router, ip); err != nil {
		return false, err
	}
	old := t.peers[m.Router]
	if old != nil && m.Seq <= old.seq {
		t.stale.Add(1)
		return false, nil
	}
	if m.DirFrom > 0 && (old == nil || old.dirGen != m.DirGen || m.DirFrom > len(old.dir)) {
		return false, errDirectory
	}
	size := m.DirFrom + len(m.Names)
	if n := len(m.Replicas); n > 0 && int(m.Replicas[n-1].Index) >= size {
		return false, fmt.Errorf("peer load: replica index %d beyond the directory's %d names", m.Replicas[n-1].Index, size)
	}
	dir, err := t.extendLocked(old, m)
	if err != nil {
		return false, err
	}
	var slotBuf []int32
	var valBuf []load.Peer
	if old != nil {
		// The directory entries kept from old now belong to dir: drop
		// only the references old holds beyond them. Its arrays are
		// reused for the new report.
		t.releaseLocked(old, false)
		if m.DirFrom == 0 {
			t.slots.unref(old.dir)
		} else {
			t.slots.unref(old.dir[m.DirFrom:])
		}
		slotBuf, valBuf = old.slots[:0], old.vals[:0]
	}
	rep := &report{seq: m.Seq, at: t.now(), ip: ip, dirGen: m.DirGen, dir: dir,
		slots: slices.Grow(slotBuf, len(m.Replicas)), vals: slices.Grow(valBuf, len(m.Replicas))}
	for _, r := range m.Replicas {
		rep.slots = append(rep.slots, dir[r.Index])
		rep.vals = append(rep.vals, load.Peer{InFlight: int(r.InFlight), InFlightTokens: int(r.InFlightTokens), PrefillTokens: int(r.PrefillTokens)})
	}
	t.acceptLocked(m.Router, rep, m.Tenants)
	return true, nil
}

// extendLocked is the sender's directory after m, as slots: old's first
// DirFrom entries, then a reference to each of m's names. A directory
// naming a replica twice is refused, and the references taken undone.
func (t *Table) extendLocked(old *report, m compactMessage) ([]int32, error) {
	if len(m.Names) == 0 && old != nil && m.DirFrom == len(old.dir) {
		return old.dir, nil
	}
	var dir []int32
	if m.DirFrom > 0 {
		dir = slices.Clip(old.dir[:m.DirFrom])
	}
	fresh := make([]int32, len(m.Names))
	for i, n := range m.Names {
		fresh[i] = t.slots.refBytes(n)
	}
	dir = append(dir, fresh...)
	if !t.slots.distinct(dir) {
		t.slots.unref(fresh)
		return nil, fmt.Errorf("peer load: the directory names a replica twice")
	}
	return dir, nil
}
