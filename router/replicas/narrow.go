package replicas

import (
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Defaults of the narrowed candidate list (AppendCandidatesFor).
const (
	// DefaultNarrowFrom is the replica count of a model from which a
	// decision scores the prompt's holders and a sample instead of every
	// replica: below it, scoring all is cheap and stays exact.
	DefaultNarrowFrom = 256
	// DefaultSample is d, the replicas drawn at random besides the holders
	// (power of d choices): the least loaded of 32 random replicas is in
	// the least-loaded 1/32 of the fleet with probability 1-(31/32)^32,
	// about 64%, and in the least-loaded tenth with probability 97%.
	DefaultSample = 32
	// DefaultHolderCap is the most holders a narrowed list takes: a
	// prefix every replica caches (a fleet-wide system prompt) would
	// otherwise make the narrowed list the whole fleet.
	DefaultHolderCap = 256
)

// HolderIndex names the replicas that hold a prompt's blocks
// (index.Models): AppendHolders lists one key's holders, HolderCount
// counts them without naming them.
type HolderIndex interface {
	AppendHolders(model string, key uint64, dst []string) []string
	HolderCount(model string, key uint64) int
}

// AppendCandidatesFor appends the candidates req is scored against: every
// replica of model (AppendCandidates) while model has fewer than
// Options.NarrowFrom of them, or req has no canonical keys, or the set
// has no Options.Holders; otherwise the prompt's holders from its deepest
// cached block up, at most Options.HolderCap of them (appendHolders), and
// Options.Sample others drawn at random, so that the decision costs
// O(cap + sample), not O(replicas). Candidates keep the model's replica
// order.
func (s *Set) AppendCandidatesFor(dst []scheduler.Candidate, model string, req *scheduler.Request) []scheduler.Candidate {
	if s.opts.Holders == nil || len(req.Keys) == 0 {
		return s.AppendCandidates(dst, model)
	}
	s.mu.RLock()
	rs := s.forModelLocked(model)
	if len(rs) < s.opts.NarrowFrom {
		s.mu.RUnlock()
		return s.AppendCandidates(dst, model)
	}
	tp := s.templates.of(model, rs)
	s.mu.RUnlock()
	sc := narrowPool.Get().(*narrowed)
	defer narrowPool.Put(sc)
	s.appendHolders(sc, req.Model, req.Keys, tp, len(tp.cands))
	sc.picked = sample(sc.picked, len(tp.cands), s.opts.Sample, sc.seen)
	sc.picked = inOrder(sc.picked[:0], sc.seen)
	return s.appendPicked(dst, tp, sc.picked)
}

// sample appends up to d positions below n that are not in picked yet,
// drawn uniformly, and marks them in seen, which marks picked; it stops
// after 4d draws, so a fleet that is mostly picked already costs no more
// than that.
func sample(picked []int, n, d int, seen []uint64) []int {
	drawn := 0
	for try := 0; try < 4*d && drawn < d && len(picked) < n; try++ {
		i := rand.IntN(n)
		if seen[i>>6]&(1<<(i&63)) == 0 {
			seen[i>>6] |= 1 << (i & 63)
			picked = append(picked, i)
			drawn++
		}
	}
	return picked
}

// inOrder appends the positions marked in seen to dst, in order: the
// picked positions sorted in a pass over one word per 64 replicas, where
// sorting them compared each several times.
func inOrder(dst []int, seen []uint64) []int {
	for w, m := range seen {
		for ; m != 0; m &= m - 1 {
			dst = append(dst, w<<6|bits.TrailingZeros64(m))
		}
	}
	return dst
}

func resizeWords(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// appendPicked appends the template's candidates at picked (sorted, so
// in the template's order) with their health, modes and loads, as
// AppendCandidates does for all of them.
func (s *Set) appendPicked(dst []scheduler.Candidate, tp *template, picked []int) []scheduler.Candidate {
	start := len(dst)
	for _, i := range picked {
		dst = append(dst, tp.cands[i])
	}
	out := dst[start:]
	now := s.opts.Now()
	s.mu.RLock()
	if len(s.breakers) > 0 {
		for i := range out {
			if b := s.breakers[out[i].ID]; b != nil {
				out[i].Healthy = !now.Before(b.openUntil)
			}
		}
	}
	s.mu.RUnlock()
	modes := tp.modesNow(s)
	for k, i := range picked {
		out[k].Mode = modes[i]
	}
	s.tracker.Read(func(l load.Locked) {
		for k, i := range picked {
			out[k].Load = l.LoadOf(tp.loads, i)
		}
	})
	return dst
}

// narrowed is AppendCandidatesFor's scratch memory, pooled so that
// narrowing allocates nothing in the steady state.
type narrowed struct {
	holders []string
	picked  []int
	seen    []uint64
}

var narrowPool = sync.Pool{New: func() any { return new(narrowed) }}
