package driver

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// taskStore is the in-memory map of task handles by task id.
type taskStore struct {
	mu    sync.RWMutex // guards tasks
	tasks map[string]*taskHandle
}

func newTaskStore() *taskStore { return &taskStore{tasks: map[string]*taskHandle{}} }

func (s *taskStore) get(id string) (*taskHandle, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.tasks[id]
	return h, ok
}

// add stores h unless its id is taken; it reports whether it stored it.
func (s *taskStore) add(h *taskHandle) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[h.id]; ok {
		return false
	}
	s.tasks[h.id] = h
	return true
}

func (s *taskStore) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tasks, id)
}

func (s *taskStore) all() []*taskHandle {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*taskHandle, 0, len(s.tasks))
	for _, h := range s.tasks {
		out = append(out, h)
	}
	return out
}

// kvSet holds the open KV listener of each replica, so that starting a
// shard whose replica already has a listener reuses it and its port
// (docs/ARCHITECTURE.md, behaviour 2). Each listener has one owner, the task that started
// last on it; only the owner's stop or destroy releases it.
type kvSet struct {
	intake KVIntake
	log    hclog.Logger

	mu   sync.Mutex // guards open
	open map[string]*kvEntry
}

type kvEntry struct {
	l     KVListener
	owner string // task id
}

func newKVSet(intake KVIntake, log hclog.Logger) *kvSet {
	return &kvSet{intake: intake, log: log, open: map[string]*kvEntry{}}
}

var errNoIntake = errors.New("this plugin has no KV-event intake configured")

// get returns replica's listener for task owner, opening it where o says
// if there is none. prev is the owner before (empty when the listener is
// new), for restore if the start fails.
func (s *kvSet) get(replica, owner string, o KVOpen) (l KVListener, prev string, err error) {
	if s.intake == nil {
		return nil, "", errNoIntake
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.open[replica]; ok {
		prev, e.owner = e.owner, owner
		return e.l, prev, nil
	}
	l, err = s.intake.Open(replica, o)
	if err != nil {
		return nil, "", err
	}
	s.open[replica] = &kvEntry{l: l, owner: owner}
	return l, "", nil
}

// getInRange is get for a new shard: over TCP with a port range [lo, hi]
// (from Nomad's client_min_port/client_max_port) the listener binds inside
// it, else anywhere; with o.Dir it uses no port.
func (s *kvSet) getInRange(replica, owner string, o KVOpen, lo, hi int) (KVListener, string, error) {
	if o.Dir != "" || lo <= 0 || hi < lo {
		return s.get(replica, owner, o)
	}
	n := max(o.DataParallel, 1)
	err := fmt.Errorf("port range %d-%d is smaller than %d ranks", lo, hi, n)
	for p := lo; p+n-1 <= hi; p++ {
		l, prev, e := s.get(replica, owner, KVOpen{DataParallel: o.DataParallel, Port: p})
		if e == nil {
			return l, prev, nil
		}
		if errors.Is(e, errNoIntake) {
			return nil, "", e
		}
		err = fmt.Errorf("no free port in %d-%d: %w", lo, hi, e)
	}
	return nil, "", err
}

// giveBack returns ownership to prev after a failed start that reused the
// listener.
func (s *kvSet) giveBack(replica, owner, prev string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.open[replica]; ok && e.owner == owner {
		e.owner = prev
	}
}

// lookup returns replica's open listener, if any.
func (s *kvSet) lookup(replica string) (KVListener, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.open[replica]
	if !ok {
		return nil, false
	}
	return e.l, true
}

// summary is the intake's summary of replica (zero without an intake).
func (s *kvSet) summary(replica string) KVSummary {
	if s.intake == nil {
		return KVSummary{}
	}
	return s.intake.Summary(replica)
}

// release closes replica's listener if owner owns it, and tells routers
// the replica holds nothing (docs/ARCHITECTURE.md, behaviour 5).
func (s *kvSet) release(replica, owner string) {
	s.mu.Lock()
	e, ok := s.open[replica]
	if ok && e.owner == owner {
		delete(s.open, replica)
	}
	s.mu.Unlock()
	if !ok || e.owner != owner {
		return
	}
	if err := e.l.Close(); err != nil {
		s.log.Warn("close kv listener", "replica", replica, "error", err)
	}
	s.intake.Forget(replica)
}

// closeAll closes every listener at plugin shutdown, without forgetting:
// the shards run on and the next plugin process opens the same sockets or
// ports.
func (s *kvSet) closeAll() {
	s.mu.Lock()
	open := s.open
	s.open = map[string]*kvEntry{}
	s.mu.Unlock()
	for _, e := range open {
		_ = e.l.Close()
	}
}
