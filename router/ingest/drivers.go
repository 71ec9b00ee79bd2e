package ingest

import (
	"maps"
	"slices"
)

// Drivers returns, for every driver whose session holds live KV state for
// some replica, those replicas, sorted: the status page's view of which
// driver makes which replica exact.
func (s *Sink) Drivers() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for replica, driver := range s.owner {
		out[driver] = append(out[driver], replica)
	}
	for _, d := range slices.Collect(maps.Keys(out)) {
		slices.Sort(out[d])
	}
	return out
}
