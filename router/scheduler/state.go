package scheduler

import (
	"fmt"
	"sync/atomic"
)

// StateKey names one per-candidate fact that scorers hand each other
// within one scheduling decision: one scorer writes candidate i's value,
// a later one (or the picker) reads it. The built-in prefix scorers write
// Predictions and the ttft scorer reads it; plugins outside this package
// use the same mechanism, for Predictions or for keys of their own.
//
// The value is typed by the key, so a reader cannot mistake one fact for
// another, and it lives in scratch memory kept in the Request: after a
// key's first use on a pooled Request, writing and reading it allocate
// nothing, keeping Schedule's zero-allocation path.
//
// Make keys once, as package-level variables (NewStateKey): every key
// ever made reserves a slot in the Requests that use it. The zero
// StateKey holds nothing: Set ignores it and Get finds nothing.
type StateKey[T any] struct {
	id   int // its slot in cycleState.state; 0 for the zero key
	name string
}

// stateKeys counts the keys made, giving each its slot from 1.
var stateKeys atomic.Int64

// NewStateKey makes a key for values of type T; name is for error
// messages (such as ordering errors) and need not be unique.
func NewStateKey[T any](name string) StateKey[T] {
	return StateKey[T]{id: int(stateKeys.Add(1)), name: name}
}

// Name is the name the key was made with.
func (k StateKey[T]) Name() string { return k.name }

func (k StateKey[T]) stateID() int { return k.id }

// Set records v for candidate i (its position in the cands passed to
// Score) in req's current decision. Outside Schedule, or for a position
// beyond the candidates, it does nothing.
func (k StateKey[T]) Set(req *Request, i int, v T) {
	c := &req.cycle
	if k.id == 0 || i < 0 || i >= c.n {
		return
	}
	s := k.slot(c)
	s.v[i], s.set[i] = v, true
}

// Get is the value some scorer Set for candidate i in req's current
// decision; ok is false when none did.
func (k StateKey[T]) Get(req *Request, i int) (v T, ok bool) {
	c := &req.cycle
	if k.id == 0 || k.id >= len(c.state) || i < 0 || i >= c.n {
		return v, false
	}
	s, _ := c.state[k.id].(*stateSlot[T])
	if s == nil || !s.set[i] {
		return v, false
	}
	return s.v[i], true
}

// slot is k's values in c, made (sized for c's candidates) on first use.
func (k StateKey[T]) slot(c *cycleState) *stateSlot[T] {
	if k.id >= len(c.state) {
		c.state = append(c.state, make([]resetter, k.id+1-len(c.state))...)
	}
	s, _ := c.state[k.id].(*stateSlot[T])
	if s == nil {
		s = &stateSlot[T]{}
		s.reset(c.n)
		c.state[k.id] = s
	}
	return s
}

// resetter is a slot of state, cleared and sized for each decision.
type resetter interface{ reset(n int) }

// stateSlot holds one key's values, one per candidate.
type stateSlot[T any] struct {
	v   []T
	set []bool
}

func (s *stateSlot[T]) reset(n int) {
	s.v = resize(s.v, n)
	s.set = resize(s.set, n)
}

// AnyStateKey is a StateKey of any value type, for StateWriter and
// StateReader.
type AnyStateKey interface {
	Name() string
	stateID() int
}

// StateWriter is implemented by scorers that Set state keys. Together with
// StateReader it lets New refuse a config that lists a scorer before the
// scorers whose state it reads: scorers run in config order.
type StateWriter interface {
	WritesState() []AnyStateKey
}

// StateReader is implemented by scorers that Get state keys other scorers
// write.
type StateReader interface {
	ReadsState() []AnyStateKey
}

// stateBefore reports an error when sc reads a state key that a scorer in
// later writes.
func stateBefore(sc Scorer, later []WeightedScorer) error {
	r, ok := sc.(StateReader)
	if !ok {
		return nil
	}
	for _, rk := range r.ReadsState() {
		for _, w := range later {
			wr, ok := w.Scorer.(StateWriter)
			if !ok {
				continue
			}
			for _, wk := range wr.WritesState() {
				if wk.stateID() != 0 && wk.stateID() == rk.stateID() {
					return fmt.Errorf("scorer %s reads the %s %s writes, so must come after it", sc.TypedName(), rk.Name(), w.TypedName())
				}
			}
		}
	}
	return nil
}

var _ AnyStateKey = StateKey[int]{}
