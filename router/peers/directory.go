package peers

import (
	"math/rand/v2"
	"slices"
)

// directory is a publisher's list of the replica ids its compact messages
// index. Ids are appended as the router first has requests in flight to
// them and keep their index, so a peer that holds the list is sent only
// the new ones. Ids of replicas that left stay until the list holds more
// than twice the live ones (and over a floor), or would pass
// MaxDirectory: then it starts a new generation with only the live ids,
// which every peer is sent in full once.
type directory struct {
	gen   uint64
	names []string
	index map[string]int
}

// directoryFloor is how many stale ids a directory keeps before it is
// worth restating: a restatement costs every peer one long message.
const directoryFloor = 256

func newDirectory() *directory {
	d := &directory{}
	d.restart(nil)
	return d
}

// restart begins a new generation holding live, sorted.
func (d *directory) restart(live []string) {
	d.gen = rand.Uint64()>>1 | 1 // non-zero, and unlike a restarted router's
	d.names = slices.Sorted(slices.Values(live))
	d.index = make(map[string]int, len(d.names))
	for i, n := range d.names {
		d.index[n] = i
	}
}

// indices returns the index of each of ids, appending the ones it lacks,
// or restarting when the list has grown too stale.
func (d *directory) indices(ids []string) []int {
	fresh := 0
	for _, id := range ids {
		if _, ok := d.index[id]; !ok {
			fresh++
		}
	}
	if n := len(d.names) + fresh; n > MaxDirectory || n > 2*len(ids)+directoryFloor {
		d.restart(ids)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		x, ok := d.index[id]
		if !ok {
			x = len(d.names)
			d.names = append(d.names, id)
			d.index[id] = x
		}
		out[i] = x
	}
	return out
}
