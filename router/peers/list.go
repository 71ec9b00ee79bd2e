package peers

import (
	"sort"
	"time"
)

// Peer is one reporting peer router, from its newest message.
type Peer struct {
	ID       string
	LastSeen time.Time
	// Replicas it named and its requests in flight to them.
	Replicas, InFlight int
}

// List returns the reporting peers, by id, for the status page.
func (t *Table) List() []Peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Peer, 0, len(t.peers))
	for id, r := range t.peers {
		p := Peer{ID: id, LastSeen: r.at, Replicas: len(r.slots)}
		for _, v := range r.vals {
			p.InFlight += v.InFlight
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
