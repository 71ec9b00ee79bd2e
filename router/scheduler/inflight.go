package scheduler

import "sync"

// Tracker keeps each replica's load as the router sees it: requests and
// prompt tokens in flight (counted by the proxy with Begin and the returned
// end func) and the engine metrics last scraped. It is safe for concurrent
// use.
type Tracker struct {
	mu   sync.Mutex
	load map[string]*Load
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker { return &Tracker{load: map[string]*Load{}} }

func (t *Tracker) get(replica string) *Load {
	l := t.load[replica]
	if l == nil {
		l = &Load{}
		t.load[replica] = l
	}
	return l
}

// Begin counts a request of promptTokens to replica as in flight; call the
// returned func exactly once when it ends (extra calls do nothing).
func (t *Tracker) Begin(replica string, promptTokens int) (end func()) {
	t.mu.Lock()
	l := t.get(replica)
	l.InFlight++
	l.InFlightTokens += promptTokens
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			l.InFlight-- // the entry it began on, even if since forgotten
			l.InFlightTokens -= promptTokens
			t.mu.Unlock()
		})
	}
}

// SetScraped records a replica's engine metrics from its last scrape.
func (t *Tracker) SetScraped(replica string, waiting, running, kvUsage float64) {
	t.mu.Lock()
	l := t.get(replica)
	l.Waiting, l.Running, l.KVUsage = waiting, running, kvUsage
	t.mu.Unlock()
}

// Load returns replica's current load (zero when unknown).
func (t *Tracker) Load(replica string) Load {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.load[replica]; l != nil {
		return *l
	}
	return Load{}
}

// FillLoads sets each candidate's Load to its replica's current load (zero
// when unknown), under one lock for all of them.
func (t *Tracker) FillLoads(cands []Candidate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range cands {
		cands[i].Load = Load{}
		if l := t.load[cands[i].ID]; l != nil {
			cands[i].Load = *l
		}
	}
}

// Forget drops a replica that left the fleet. Requests still in flight to
// it end harmlessly.
func (t *Tracker) Forget(replica string) {
	t.mu.Lock()
	delete(t.load, replica)
	t.mu.Unlock()
}
