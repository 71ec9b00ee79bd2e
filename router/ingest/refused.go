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

// refusals is what the Sink knows of the replicas refused for lack of
// room, and the snapshots it asks for once room frees.
type refusals struct {
	byID map[string]*refusal // replica -> why its state is not in the index
	// wait and due order the refusals not asked for yet
	// (retryRefusedLocked).
	wait    refusalQueue
	due     map[string]*refusalQueue
	resyncs map[string]bool // drivers to ask for a snapshot (TakeResyncs)
	// now collects the current update's refusals (ApplyRefusing).
	now []kvwire.Refusal
}

func newRefusals() refusals {
	return refusals{byID: map[string]*refusal{}, due: map[string]*refusalQueue{}, resyncs: map[string]bool{}}
}

// current reports whether rf is replica rf.id's refusal now: queue
// entries of refusals replaced or removed since are skipped.
func (rs *refusals) current(rf *refusal) bool { return rs.byID[rf.id] == rf }

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
	prev, ok := s.refusals.byID[replica]
	if !ok {
		s.log.Warn("index has no room for a replica; it routes in approx mode until room frees", "replica", replica, "model", model, "error", err)
		prev = &refusal{}
	}
	wait := min(minRefusedBackoff<<min(prev.times, 20), maxRefusedBackoff)
	rf := &refusal{id: replica, model: model, driver: driver, reason: err.Error(), times: prev.times + 1, after: s.opts.Now().Add(wait)}
	s.refusals.byID[replica] = rf
	s.refusals.push(&s.refusals.wait, rf)
	s.published.touch(replica)
	s.stats.Refused++
	s.models.For(model).Remove(replica)
	s.refusals.now = append(s.refusals.now, kvwire.Refusal{Replica: replica, Reason: err.Error()})
}

// isRoomErr reports whether err is the index's lack of room (not bad input).
func isRoomErr(err error) bool {
	return errors.Is(err, index.ErrFull) || errors.Is(err, index.ErrKeyCap)
}

// retryRefusedLocked asks for the snapshots of refused replicas whose
// index has room now, as many per model as it has free slots, in replica
// id order. It runs after every update, so it touches only refusals whose
// backoff ends now and models with refusals due: wait holds the refusals
// not due yet, by when they are; due each model's due ones, by id. Entries
// of refusals replaced or removed since are skipped where they surface.
func (s *Sink) retryRefusedLocked() {
	rs := &s.refusals
	if len(rs.byID) == 0 {
		return
	}
	rs.promoteDue(s.opts.Now())
	for model, q := range rs.due {
		free := -1 // not asked yet
		for q.Len() > 0 {
			rf := q.items[0]
			if !rs.current(rf) {
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
			rs.resyncs[rf.driver] = true
		}
		if q.Len() == 0 {
			delete(rs.due, model)
		}
	}
}

// promoteDue moves the refusals whose backoff ends by now from wait to
// their model's due queue.
func (rs *refusals) promoteDue(now time.Time) {
	for rs.wait.Len() > 0 && !now.Before(rs.wait.items[0].after) {
		rf := heap.Pop(&rs.wait).(*refusal)
		if !rs.current(rf) {
			continue
		}
		q := rs.due[rf.model]
		if q == nil {
			q = &refusalQueue{byID: true}
			rs.due[rf.model] = q
		}
		rs.push(q, rf)
	}
}

// push adds rf to q, first dropping q's entries of refusals no
// longer current when they outnumber the current ones: a replica refused
// again and again while its index stays full must not grow q.
func (rs *refusals) push(q *refusalQueue, rf *refusal) {
	if q.Len() >= 2*len(rs.byID)+16 {
		q.items = slices.DeleteFunc(q.items, func(r *refusal) bool { return !rs.current(r) })
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
	out := slices.Sorted(maps.Keys(s.refusals.resyncs))
	clear(s.refusals.resyncs)
	s.stats.Resyncs += uint64(len(out))
	return out
}

// ApplyRefusing implements kvwire.RefusingSink: ApplyUpdate, returning
// the replicas the index had no room for.
func (s *Sink) ApplyRefusing(u *kvwire.Update) []kvwire.Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(u)
	out := s.refusals.now
	s.refusals.now = nil
	return out
}

var (
	_ kvwire.RefusingSink = (*Sink)(nil)
	_ kvwire.Resyncer     = (*Sink)(nil)
)
