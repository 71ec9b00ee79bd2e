package ingest

import (
	"container/heap"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// Refusals: a model's index has a bound (index.MaxHolders holders, and the
// key cap set from the fleet's advertised KV capacity). A replica whose
// state does not fit is refused whole: what it had in the index is
// removed, it routes in approx mode with the reason (Refused), and its
// driver's answer names it (kvwire.RefusedError). Its later deltas are
// refused too, since they change a state the index does not hold. When
// the index has room again (a replica left, keys were freed), the sink
// asks the driver for a snapshot (TakeResyncs, kvwire's 409), at most as
// many as there are free holder slots at a time, so a thousand refused
// replicas do not all resend for one freed slot.

// refusal is why a replica's state is not in the index.
type refusal struct {
	id, model, driver, reason string
	asked                     bool      // a snapshot was asked for; refused again if it does not fit
	times                     int       // refusals in a row
	after                     time.Time // no snapshot is asked for before
}

// Backoff between a refused replica's snapshot requests: room that keeps
// filling up (a key cap reached again at once) must not become a loop of
// snapshots.
const (
	minRefusedBackoff = time.Second
	maxRefusedBackoff = 5 * time.Minute
)

// refuseLocked records that replica's state did not fit and removes what
// of it reached the index.
func (s *Sink) refuseLocked(replica, model, driver string, err error) {
	prev, ok := s.refused[replica]
	if !ok {
		s.log.Warn("index has no room for a replica; it routes in approx mode until room frees", "replica", replica, "model", model, "error", err)
		prev = &refusal{}
	}
	wait := min(minRefusedBackoff<<min(prev.times, 20), maxRefusedBackoff)
	rf := &refusal{id: replica, model: model, driver: driver, reason: err.Error(), times: prev.times + 1, after: s.opts.Now().Add(wait)}
	s.refused[replica] = rf
	s.pushRefusal(&s.refusedWait, rf)
	s.touched = append(s.touched, replica)
	s.stats.Refused++
	s.models.For(model).Remove(replica)
	s.refusedNow = append(s.refusedNow, kvwire.Refusal{Replica: replica, Reason: err.Error()})
}

// isRoomErr reports whether err is the index's lack of room (not bad input).
func isRoomErr(err error) bool {
	return errors.Is(err, index.ErrFull) || errors.Is(err, index.ErrKeyCap)
}

// retryRefusedLocked asks for the snapshots of refused replicas whose
// index has room now, as many per model as it has free slots, in replica
// id order. It runs after every update, so it touches only refusals whose
// backoff ends now and models with refusals due: refusedWait holds the
// refusals not due yet, by when they are; refusedDue each model's due ones,
// by id. Entries of refusals replaced or removed since (s.refused no
// longer holds them) are skipped where they surface.
func (s *Sink) retryRefusedLocked() {
	if len(s.refused) == 0 {
		return
	}
	now := s.opts.Now()
	for s.refusedWait.Len() > 0 && !now.Before(s.refusedWait.items[0].after) {
		rf := heap.Pop(&s.refusedWait).(*refusal)
		if s.refused[rf.id] != rf {
			continue
		}
		q := s.refusedDue[rf.model]
		if q == nil {
			q = &refusalQueue{byID: true}
			s.refusedDue[rf.model] = q
		}
		s.pushRefusal(q, rf)
	}
	for model, q := range s.refusedDue {
		free := -1 // not asked yet
		for q.Len() > 0 {
			rf := q.items[0]
			if s.refused[rf.id] != rf {
				heap.Pop(q)
				continue
			}
			if free < 0 {
				ix := s.models.For(model)
				if free = 0; ix.Room() {
					free = ix.FreeHolders()
				}
			}
			if free <= 0 {
				break
			}
			heap.Pop(q)
			free--
			rf.asked = true
			s.resyncs[rf.driver] = true
		}
		if q.Len() == 0 {
			delete(s.refusedDue, model)
		}
	}
}

// pushRefusal adds rf to q, first dropping q's entries of refusals no
// longer current when they outnumber the current ones: a replica refused
// again and again while its index stays full must not grow q.
func (s *Sink) pushRefusal(q *refusalQueue, rf *refusal) {
	if q.Len() >= 2*len(s.refused)+16 {
		q.items = slices.DeleteFunc(q.items, func(r *refusal) bool { return s.refused[r.id] != r })
		heap.Init(q)
	}
	heap.Push(q, rf)
}

// refusalQueue is a heap (container/heap) of refusals: by replica id, or
// by when they are due (ties by id).
type refusalQueue struct {
	items []*refusal
	byID  bool
}

func (q *refusalQueue) Len() int { return len(q.items) }
func (q *refusalQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if q.byID || a.after.Equal(b.after) {
		return a.id < b.id
	}
	return a.after.Before(b.after)
}
func (q *refusalQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *refusalQueue) Push(x any)    { q.items = append(q.items, x.(*refusal)) }
func (q *refusalQueue) Pop() any {
	n := len(q.items) - 1
	rf := q.items[n]
	q.items[n] = nil
	q.items = q.items[:n]
	return rf
}

// TakeResyncs implements kvwire.Resyncer: the drivers to ask for a
// snapshot now.
func (s *Sink) TakeResyncs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Sorted(maps.Keys(s.resyncs))
	clear(s.resyncs)
	s.stats.Resyncs += uint64(len(out))
	return out
}

// Refused reports why replica's KV state is not in the index, when it was
// refused for lack of room: it then routes in approx mode.
func (s *Sink) Refused(replica string) (string, bool) {
	v := s.synced.Load()
	if v == nil {
		return "", false
	}
	st, ok := v.states.Get(replica)
	return st.reason, ok && st.refused
}

// ApplyRefusing implements kvwire.RefusingSink: ApplyUpdate, returning
// the replicas the index had no room for.
func (s *Sink) ApplyRefusing(u *kvwire.Update) []kvwire.Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(u)
	out := s.refusedNow
	s.refusedNow = nil
	return out
}

var (
	_ kvwire.RefusingSink = (*Sink)(nil)
	_ kvwire.Resyncer     = (*Sink)(nil)
)
