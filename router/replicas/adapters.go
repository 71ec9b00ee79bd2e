package replicas

import (
	"maps"
	"slices"
	"sort"
)

// Adapter is a LoRA adapter that replicas serve under its own model name
// (vLLM's --lora-modules name=path), as the router's /v1/models lists it.
type Adapter struct {
	// Name is the model name clients ask for.
	Name string
	// Parent is the base model: the Model of the replicas serving it.
	Parent string
}

// loras indexes the adapters replicas report. It lives under Set.mu.
type loras struct {
	byReplica map[string][]string  // replica -> adapter names, sorted
	serving   map[string][]Replica // adapter -> replicas serving it, by id
	parent    map[string]string    // adapter -> base model
}

func newLoras() loras {
	return loras{byReplica: map[string][]string{}, serving: map[string][]Replica{}, parent: map[string]string{}}
}

// rebuild recomputes which replicas serve each adapter after the set or an
// adapter list changed, forgetting the lists of replicas that left. A name
// that is also a base model's stays the base model's. An adapter name
// served on replicas of two base models goes to the base model that sorts
// first, so one request never mixes replicas of different models.
func (l *loras) rebuild(byID map[string]Replica, byModel map[string][]Replica) {
	for id := range l.byReplica {
		if _, ok := byID[id]; !ok {
			delete(l.byReplica, id)
		}
	}
	ids := slices.Sorted(maps.Keys(l.byReplica))
	serving, parent := map[string][]Replica{}, map[string]string{}
	for _, id := range ids {
		r := byID[id]
		for _, name := range l.byReplica[id] {
			if _, base := byModel[name]; base {
				continue
			}
			if p, ok := parent[name]; ok && p != r.Model {
				if r.Model > p {
					continue
				}
				serving[name] = nil
			}
			parent[name] = r.Model
			serving[name] = append(serving[name], r)
		}
	}
	l.serving, l.parent = serving, parent
}

// SetAdapters records the LoRA adapters replica serves now (from its
// /v1/models, polled with the metrics scrape), replacing what it served
// before. Requests naming an adapter then go only to replicas serving it.
// Replicas not in the set are ignored.
func (s *Set) SetAdapters(replica string, names []string) {
	names = slices.Clone(names)
	sort.Strings(names)
	names = slices.Compact(names)
	same := func() bool {
		_, ok := s.byID[replica]
		return !ok || slices.Equal(names, s.lora.byReplica[replica])
	}
	// Every scrape reports the adapters again; most change nothing, and
	// those take only the read lock the request path shares.
	s.mu.RLock()
	unchanged := same()
	s.mu.RUnlock()
	if unchanged {
		return
	}
	s.mu.Lock()
	if same() {
		s.mu.Unlock()
		return
	}
	if len(names) == 0 {
		delete(s.lora.byReplica, replica)
	} else {
		s.lora.byReplica[replica] = names
	}
	s.lora.rebuild(s.byID, s.byModel)
	s.mu.Unlock()
	s.opts.Logger.Info("replica adapters changed", "replica", replica, "adapters", names)
}

// Adapters lists the LoRA adapters some replica serves, sorted by name.
func (s *Set) Adapters() []Adapter {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Adapter, 0, len(s.lora.parent))
	for name, p := range s.lora.parent {
		out = append(out, Adapter{Name: name, Parent: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AdaptersOf lists the adapters replica serves, sorted.
func (s *Set) AdaptersOf(replica string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.lora.byReplica[replica])
}
