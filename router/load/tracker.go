package load

import (
	"sync"
	"time"
)

// Tracker keeps each replica's load as the router sees it: requests and
// prompt tokens in flight (counted by the proxy with BeginPrefill and the
// returned funcs), the uncached prompt tokens still waiting for their
// prefill, the engine metrics last scraped, and what the other routers
// report of their own requests (SetPeerLoads). It is safe for concurrent
// use.
//
// The prefill queued on a replica drains with time at the replica's
// prefill rate, which the tracker measures from its answers (backlog), so
// a replica halfway through a long prompt counts half of it.
type Tracker struct {
	mu    sync.Mutex
	load  map[string]*tracked
	peers map[string]Peer // the last SetPeerLoads, for entries made later
	gen   uint64          // counts entries made and forgotten, for View

	now       func() time.Time
	prior     float64 // prefill rate assumed before any is measured
	fleetRate float64 // running mean of the rates measured on any replica
}

// tracked is one replica's entry: this router's own load (with the
// scraped engine metrics) and the peers' sums, kept apart so that peer
// reports replace their part without touching the counts this router's
// requests will decrement.
type tracked struct {
	own   Load
	peer  Peer
	queue backlog // what remains of own.PrefillTokens to compute
}

// loadOf is e's Load as the scorers read it at now: this router's counts,
// with its queued prefill drained, plus the peers'.
func (t *Tracker) loadOf(e *tracked, now time.Time) Load {
	l := e.own
	l.PrefillTokens = t.prefillLeft(e, now)
	if p := &e.peer; *p != (Peer{}) {
		l.addPeer(p)
	}
	return l
}

// addPeer adds what peers report to l's router-side counts.
func (l *Load) addPeer(p *Peer) {
	l.InFlight += p.InFlight
	l.InFlightTokens += p.InFlightTokens
	l.PrefillTokens += p.PrefillTokens
}

// NewTracker returns an empty tracker.
func NewTracker(opts ...Option) *Tracker {
	t := &Tracker{load: map[string]*tracked{}, now: time.Now, prior: DefaultPrefillRate}
	for _, o := range opts {
		o(t)
	}
	return t
}

func (t *Tracker) get(replica string) *Load { return &t.entry(replica).own }

// entry is replica's entry, made (with what peers report of it) when
// absent.
func (t *Tracker) entry(replica string) *tracked {
	e := t.load[replica]
	if e == nil {
		e = &tracked{peer: t.peers[replica]}
		t.load[replica] = e
		t.gen++
	}
	return e
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
//
// An answer to a request sent while nothing of this router's was queued
// on the replica measures the replica's prefill rate (backlog).
func (t *Tracker) BeginPrefill(replica string, promptTokens, uncachedTokens int) (answered, end func()) {
	uncachedTokens = max(uncachedTokens, 0)
	t.mu.Lock()
	e := t.entry(replica)
	now := t.now()
	idle := e.own.PrefillTokens == 0 && e.peer.PrefillTokens == 0
	e.queue.advance(now, t.drainRate(e))
	e.queue.tokens += float64(uncachedTokens)
	l := &e.own
	l.InFlight++
	l.InFlightTokens += promptTokens
	l.PrefillTokens += uncachedTokens
	t.mu.Unlock()
	f := &inFlight{t: t, e: e, tokens: promptTokens, prefill: uncachedTokens, sent: now, idle: idle}
	return f.answer, f.end
}

// inFlight is one counted request. Its updates go to the entry it began
// on, even if the replica has since been forgotten.
type inFlight struct {
	t               *Tracker
	e               *tracked
	tokens, prefill int
	sent            time.Time
	idle            bool // nothing of this router's was queued when it was sent
	answered, ended bool // guarded by t.mu
}

func (f *inFlight) answer() {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if !f.answered && !f.ended {
		f.answered = true
		now := f.t.now()
		f.release(now)
		if f.idle {
			f.t.measured(f.e, f.prefill, now.Sub(f.sent))
		}
	}
}

func (f *inFlight) end() {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	if f.ended {
		return
	}
	f.ended = true
	l := &f.e.own
	l.InFlight--
	l.InFlightTokens -= f.tokens
	if !f.answered {
		f.release(f.t.now())
	}
}

// release takes the request's prefill off the queue: the replica has
// computed it (or never will), so the backlog is at most what the
// requests still unanswered queue.
func (f *inFlight) release(now time.Time) {
	e := f.e
	e.queue.advance(now, f.t.drainRate(e))
	e.own.PrefillTokens -= f.prefill
	e.queue.tokens = min(e.queue.tokens, float64(max(e.own.PrefillTokens, 0)))
}

// SetScraped records a replica's engine metrics from its last scrape.
func (t *Tracker) SetScraped(replica string, waiting, running, kvUsage float64) {
	t.mu.Lock()
	l := t.get(replica)
	l.Waiting, l.Running, l.KVUsage = waiting, running, kvUsage
	t.mu.Unlock()
}

// Load returns replica's current load (zero when unknown), peers'
// requests included.
func (t *Tracker) Load(replica string) Load {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadLocked(replica, t.now())
}

// loadLocked is replica's load: its entry's, or only what peers report
// when this router has not tracked it yet.
func (t *Tracker) loadLocked(replica string, now time.Time) Load {
	if e := t.load[replica]; e != nil {
		return t.loadOf(e, now)
	}
	var l Load
	if p, ok := t.peers[replica]; ok {
		l.addPeer(&p)
	}
	return l
}

// PeerLoad is the part of replica's Load that its peers report.
func (t *Tracker) PeerLoad(replica string) Peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.load[replica]; e != nil {
		return e.peer
	}
	return t.peers[replica]
}

// Read calls f with a view of every replica's load, under one lock for
// all the lookups f makes: every request reads the load of each of its
// candidates (router/replicas). f must not keep the view nor call the
// tracker's other methods, which would wait on the lock f holds.
func (t *Tracker) Read(f func(Locked)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(Locked{t, t.now()})
}

// Locked reads loads while Read holds the tracker's lock, all as of one
// instant.
type Locked struct {
	t   *Tracker
	now time.Time
}

// Load is replica's current load (zero when unknown), peers' requests
// included, as Tracker.Load returns it.
func (l Locked) Load(replica string) Load {
	t := l.t
	// loadLocked's cases, written out: this runs for every candidate of
	// every request.
	switch e := t.load[replica]; {
	case e != nil:
		return t.loadOf(e, l.now)
	case len(t.peers) == 0:
		return Load{}
	default:
		return t.loadLocked(replica, l.now)
	}
}

// Own returns this router's own requests in flight per replica, leaving
// out replicas with none: what it reports to its peers, its queued prefill
// drained as it reads it itself.
func (t *Tracker) Own() map[string]Peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	out := map[string]Peer{}
	for id, e := range t.load {
		if p := (Peer{InFlight: e.own.InFlight, InFlightTokens: e.own.InFlightTokens, PrefillTokens: t.prefillLeft(e, now)}); p != (Peer{}) {
			out[id] = p
		}
	}
	return out
}

// SetPeerLoads replaces what the other routers have in flight, summed per
// replica over every peer still reporting. The tracker keeps loads, so it
// adds these to its own counts in Load and Read; a replica absent
// from loads has no peer requests.
func (t *Tracker) SetPeerLoads(loads map[string]Peer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers = loads
	now := t.now()
	for id, e := range t.load {
		// Drain what was queued at the share it had until now, then
		// change the share.
		e.queue.advance(now, t.drainRate(e))
		e.peer = loads[id]
	}
}

// Forget drops a replica that left the fleet. Requests still in flight to
// it end harmlessly.
func (t *Tracker) Forget(replica string) {
	t.mu.Lock()
	if _, ok := t.load[replica]; ok {
		delete(t.load, replica)
		t.gen++
	}
	t.mu.Unlock()
}
