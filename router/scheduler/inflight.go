package scheduler

import "sync"

// Tracker keeps each replica's load as the router sees it: requests and
// prompt tokens in flight (counted by the proxy with BeginPrefill and the
// returned funcs), the uncached prompt tokens still waiting for their
// prefill, and the engine metrics last scraped. It is safe for concurrent
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
	_, end = t.BeginPrefill(replica, promptTokens, 0)
	return end
}

// BeginPrefill counts a request of promptTokens to replica as in flight,
// and its uncachedTokens (the prompt less what the decision predicted
// cached there) as prefill queued on the replica until answered is called:
// when the replica's first byte arrives, as vLLM streams nothing before
// the prompt is prefilled. Call end exactly once when the request ends; it
// also releases the prefill of a request never answered. Extra calls of
// either do nothing.
func (t *Tracker) BeginPrefill(replica string, promptTokens, uncachedTokens int) (answered, end func()) {
	uncachedTokens = max(uncachedTokens, 0)
	t.mu.Lock()
	l := t.get(replica)
	l.InFlight++
	l.InFlightTokens += promptTokens
	l.PrefillTokens += uncachedTokens
	t.mu.Unlock()
	f := &inFlight{t: t, l: l, tokens: promptTokens, prefill: uncachedTokens}
	return f.answer, f.end
}

// inFlight is one counted request. Its updates go to the entry it began
// on, even if the replica has since been forgotten.
type inFlight struct {
	t               *Tracker
	l               *Load
	tokens, prefill int
	answered, ended bool // guarded by t.mu
}

func (f *inFlight) answer() {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if !f.answered && !f.ended {
		f.answered = true
		f.l.PrefillTokens -= f.prefill
	}
}

func (f *inFlight) end() {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.ended {
		return
	}
	f.ended = true
	f.l.InFlight--
	f.l.InFlightTokens -= f.tokens
	if !f.answered {
		f.l.PrefillTokens -= f.prefill
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
