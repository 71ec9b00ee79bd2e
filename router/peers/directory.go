package peers

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/llmgw/llmgw/router/load"
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

// fit makes room for the ids of live: when adding the ones the list
// lacks would make it too stale (or pass MaxDirectory), it restarts with
// live's ids alone.
func (d *directory) fit(live map[string]load.Peer) {
	fresh := 0
	for id := range live {
		if _, ok := d.index[id]; !ok {
			fresh++
		}
	}
	if n := len(d.names) + fresh; n > MaxDirectory || n > 2*len(live)+directoryFloor {
		d.restart(slices.Collect(maps.Keys(live)))
	}
}

// at is id's index, appending it when the list lacks it.
func (d *directory) at(id string) int {
	x, ok := d.index[id]
	if !ok {
		x = len(d.names)
		d.names = append(d.names, id)
		d.index[id] = x
	}
	return x
}
