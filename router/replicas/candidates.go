package replicas

import (
	"sync"
	"sync/atomic"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Candidates returns model's replicas as scheduler candidates, with their
// routing mode, breaker health and current load.
func (s *Set) Candidates(model string) []scheduler.Candidate {
	return s.AppendCandidates(nil, model)
}

// AppendCandidates appends model's candidates to dst and returns it: what
// Candidates returns, without allocating when dst has room. It is on every
// request's path: the fields that change only with membership (id, model,
// draining) are copied in one piece from a template kept per replica list,
// breakers are looked up only while one exists, each source is read
// under one lock for all replicas, and loads are read by position.
func (s *Set) AppendCandidates(dst []scheduler.Candidate, model string) []scheduler.Candidate {
	start := len(dst)
	now := s.opts.Now()
	s.mu.RLock()
	rs := s.forModelLocked(model)
	tp := s.templates.of(model, rs)
	dst = append(dst, tp.cands...)
	out := dst[start:]
	if len(s.breakers) > 0 {
		for i := range out {
			if b := s.breakers[out[i].ID]; b != nil {
				out[i].Healthy = !now.Before(b.openUntil)
			}
		}
	}
	s.mu.RUnlock()
	tp.fillModes(out, s)
	s.tracker.Read(func(l load.Locked) {
		for i := range out {
			out[i].Load = l.LoadOf(tp.loads, i)
		}
	})
	return dst
}

// modes are a template's candidates' routing modes as of one generation of
// the KV state's synced set and one epoch of the set's block sizes.
type modes struct {
	gen, epoch uint64
	modes      []scheduler.Mode
}

// fillModes sets each candidate's mode, asking the KV state only when its
// synced set changed since the template last did: 64 lookups by name on
// every request cost about a microsecond, and the set changes only when a
// replica's KV events start or stop.
func (tp *template) fillModes(out []scheduler.Candidate, s *Set) {
	m := tp.modesNow(s)
	if len(m) != len(out) {
		m = tp.buildModes(s, len(out))
	}
	for i := range out {
		out[i].Mode = m[i]
	}
}

// modesNow returns the modes of the template's candidates as of the KV
// state's current synced set, asking it only when that set changed.
func (tp *template) modesNow(s *Set) []scheduler.Mode {
	gen, epoch := s.kv.SyncedGeneration(), s.sizes.epoch.Load()
	if m := tp.modes.Load(); m != nil && m.gen == gen && m.epoch == epoch && len(m.modes) == len(tp.cands) {
		return m.modes
	}
	return tp.buildModes(s, len(tp.cands))
}

func (tp *template) buildModes(s *Set, n int) []scheduler.Mode {
	m := &modes{gen: s.kv.SyncedGeneration(), epoch: s.sizes.epoch.Load(), modes: make([]scheduler.Mode, n)}
	for i := range n {
		m.modes[i] = s.Mode(tp.cands[i].ID)
	}
	tp.modes.Store(m)
	return m.modes
}

// positions maps the template's replica ids to their candidates'
// positions, built on first use (AppendCandidatesFor).
func (tp *template) positions() map[string]int {
	tp.posOnce.Do(func() {
		tp.pos = make(map[string]int, len(tp.cands))
		for i, c := range tp.cands {
			tp.pos[c.ID] = i
		}
	})
	return tp.pos
}

// templates keeps, per model (or adapter) name, the candidates of its
// replica list as of the list it was built from. Replace and SetAdapters
// build new lists, so a template whose list is not the current one (by
// identity) is rebuilt on first use; readers never lock, and a miss
// copies the small map.
type templates struct {
	m  atomic.Pointer[map[string]*template]
	mu sync.Mutex // serialises rebuilds
}

type template struct {
	from  []Replica // the list the candidates were built from
	cands []scheduler.Candidate
	modes atomic.Pointer[modes] // the candidates' modes, see fillModes
	// loads finds the candidates' entries in the load tracker by position
	// (guarded by the tracker's Read).
	loads *load.View

	posOnce sync.Once
	pos     map[string]int // see positions
}

// of returns the template of rs, model's current replica list: its
// candidates are healthy, in no particular mode, with no load
// (AppendCandidates fills those in). The template is shared: callers copy
// its candidates.
func (t *templates) of(model string, rs []Replica) *template {
	if m := t.m.Load(); m != nil {
		if tp := (*m)[model]; tp != nil && sameList(tp.from, rs) {
			return tp
		}
	}
	tp := &template{from: rs, cands: make([]scheduler.Candidate, len(rs))}
	tp.loads = load.NewView(len(rs), func(i int) string { return tp.cands[i].ID })
	for i, r := range rs {
		tp.cands[i] = scheduler.Candidate{ID: r.ID, Model: r.Model, Healthy: true, Draining: r.Draining}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := map[string]*template{model: tp}
	if m := t.m.Load(); m != nil {
		for name, old := range *m {
			if name != model && len(next) < maxTemplates {
				next[name] = old
			}
		}
	}
	t.m.Store(&next)
	return tp
}

// maxTemplates bounds the templates kept (request model names are client
// input; only names with replicas get this far, but adapters can be many).
const maxTemplates = 1024

// sameList reports whether a and b are the same list: the same backing
// array and length (lists are never modified once built).
func sameList(a, b []Replica) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
