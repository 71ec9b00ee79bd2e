package load

import (
	"math"
	"time"
)

// DefaultPrefillRate is the prefill speed, in prompt tokens a second, that
// a tracker assumes of a replica before it has measured one: low enough
// for any model an operator serves on one data-centre GPU or more (a 70B
// model on one H100 prefills about 2,000 tokens a second, an 8B model ten
// times that), so that it under- rather than overstates how much of a
// replica's queued prefill is done.
const DefaultPrefillRate = 1000

// Measuring a replica's prefill speed: only a request sent when nothing of
// this router's was queued there, and with at least minRateSample uncached
// tokens, says how fast the replica prefills (its time to first token is
// then its own prefill, plus the API server's and one step's overhead,
// which makes the figure err low). rateWeight is the weight of each new
// sample in the running mean.
const (
	minRateSample = 256
	rateWeight    = 0.3
)

// Option configures a Tracker.
type Option func(*Tracker)

// WithClock sets the tracker's clock (time.Now by default), for tests.
func WithClock(now func() time.Time) Option { return func(t *Tracker) { t.now = now } }

// WithPrefillRate sets the prefill speed assumed of a replica until one is
// measured, in prompt tokens a second (DefaultPrefillRate by default). 0
// turns draining off: queued prefill counts in full until the replica
// answers, and no rate is measured.
func WithPrefillRate(tokensPerSecond float64) Option {
	return func(t *Tracker) { t.prior = max(0, tokensPerSecond) }
}

// backlog is the prefill a replica still has to do of this router's
// requests: their uncached tokens as they were sent, less what the
// replica computed since at this router's share of its prefill rate
// (drainRate). The tokens of requests
// not yet answered (Load.PrefillTokens of the entry's own counts) bound it
// from above, so it is never more than the count it refines.
//
// Why: a replica that started prefilling a long shared context a second ago
// is a second closer to done than one that just took it, and a sibling
// that follows it there waits only for the rest. Counted in full until the
// first byte, the queue of a replica computing the context priced the
// sibling's wait there the same as computing the whole context again on an
// idle replica, and bursts spread over replicas that each computed it.
type backlog struct {
	tokens float64   // left to prefill as of at
	at     time.Time // when tokens was last advanced
	rate   float64   // measured prompt tokens a second; 0 until measured
}

// left is what remains of the backlog at now, draining at rate.
func (b *backlog) left(now time.Time, rate float64) float64 {
	if b.tokens <= 0 {
		return 0
	}
	return max(0, b.tokens-rate*now.Sub(b.at).Seconds())
}

// advance moves the backlog to now.
func (b *backlog) advance(now time.Time, rate float64) {
	b.tokens, b.at = b.left(now, rate), now
}

// drainRate is the rate e's backlog drains at: the replica's prefill rate
// (rateOf), shared with the prefill the peers report queued there in
// proportion to each part, as of the backlog's last advance.
//
// Why: each router drains only its own part, and the peers' part reaches
// it already drained by them. Drained at the full rate by every router,
// the replica's queue fell at the engine's rate once per router with work
// there, and two routers that had each sent a burst's siblings to one
// replica read its queue as emptying twice as fast as it did.
func (t *Tracker) drainRate(e *tracked) float64 {
	r := t.rateOf(e)
	own, peer := e.queue.tokens, float64(e.peer.PrefillTokens)
	if r == 0 || own <= 0 || peer <= 0 {
		return r
	}
	return r * own / (own + peer)
}

// rateOf is the replica's prefill rate: its own measured rate, else the
// mean of those the tracker measured, else its prior.
func (t *Tracker) rateOf(e *tracked) float64 {
	switch {
	case t.prior == 0:
		return 0 // draining is off
	case e.queue.rate > 0:
		return e.queue.rate
	case t.fleetRate > 0:
		return t.fleetRate
	}
	return t.prior
}

// measured folds one request's prefill speed into e's rate and the
// tracker's.
func (t *Tracker) measured(e *tracked, uncached int, took time.Duration) {
	if t.prior == 0 || uncached < minRateSample || took <= 0 {
		return
	}
	r := float64(uncached) / took.Seconds()
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return
	}
	e.queue.rate = mean(e.queue.rate, r)
	t.fleetRate = mean(t.fleetRate, r)
}

// mean is the running mean of samples with r the newest (r alone when
// there was none).
func mean(old, r float64) float64 {
	if old <= 0 {
		return r
	}
	return old + rateWeight*(r-old)
}

// prefillLeft is e's own queued prefill at now as the scorers read it:
// the drained backlog, rounded up.
func (t *Tracker) prefillLeft(e *tracked, now time.Time) int {
	if e.own.PrefillTokens <= 0 {
		return 0
	}
	left := min(e.queue.left(now, t.drainRate(e)), float64(e.own.PrefillTokens))
	return int(math.Ceil(left))
}

// PrefillRate is the prefill speed the tracker assumes of replica, in
// prompt tokens a second: its measured rate, else the mean of those
// measured on any replica, else the prior (0 with draining off). The
// autoscaling signal sizes the fleet by it (router/autoscale).
func (t *Tracker) PrefillRate(replica string) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.load[replica]; e != nil {
		return t.rateOf(e)
	}
	return t.rateOf(&tracked{})
}
