package ratelimit

import (
	"math"
	"sync"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// Usage is one router's use of one tenant's limits, as it tells its peers.
type Usage struct {
	// Requests and Tokens are running totals of what the router charged
	// since it started (Tokens net of usage corrections): a peer charges
	// their growth between two reports.
	Requests, Tokens int64
	// InFlight and Streams are what the router has in flight now.
	InFlight, Streams int
}

// Limiter holds every tenant's buckets and counters. Safe for concurrent
// use.
type Limiter struct {
	now func() time.Time

	mu      sync.RWMutex
	tenants map[string]*state
	// peers holds each peer's last report per tenant.
	peers map[string]map[string]Usage
}

// New returns an empty Limiter.
func New() *Limiter {
	return &Limiter{now: time.Now, tenants: map[string]*state{}, peers: map[string]map[string]Usage{}}
}

// state is one tenant's.
type state struct {
	mu           sync.Mutex
	lim          tenant.Limits // as of the last admission
	req, tok     bucket
	own          Usage
	peerInFlight int
	peerStreams  int
	changed      time.Time // of own, for Own to leave idle tenants out
}

// sizes of the buckets for limits l: one second of requests (at least
// one), one minute of tokens.
func reqSize(l tenant.Limits) float64 { return math.Max(l.RequestsPerSecond, 1) }
func tokRate(l tenant.Limits) float64 { return float64(l.TokensPerMinute) / 60 }

func limited(l tenant.Limits) bool {
	return l.RequestsPerSecond > 0 || l.TokensPerMinute > 0 || l.MaxConcurrent > 0 || l.MaxStreams > 0
}

func (l *Limiter) get(name string, create bool) *state {
	l.mu.RLock()
	st := l.tenants[name]
	l.mu.RUnlock()
	if st != nil || !create {
		return st
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st = l.tenants[name]; st == nil {
		st = &state{}
		l.tenants[name] = st
		// Peers' in-flight counts reported before this router met the
		// tenant count from the start.
		for _, p := range l.peers {
			u := p[name]
			st.peerInFlight += u.InFlight
			st.peerStreams += u.Streams
		}
	}
	return st
}

// Admit charges one request of tokens estimated tokens to t, or says
// which limit it would exceed. A tenant without limits is admitted with a
// nil Grant and an empty Status at no cost. Finish the Grant when the
// request ends.
func (l *Limiter) Admit(t *tenant.Tenant, tokens int64, stream bool) (*Grant, Status) {
	lim := t.Limits
	if !limited(lim) {
		return nil, Status{Allowed: true}
	}
	st := l.get(t.Name, true)
	now := l.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lim = lim
	s := Status{Allowed: true}
	if lim.RequestsPerSecond > 0 {
		st.req.refill(now, lim.RequestsPerSecond, reqSize(lim))
	}
	if lim.TokensPerMinute > 0 {
		st.tok.refill(now, tokRate(lim), float64(lim.TokensPerMinute))
	}
	switch {
	case lim.RequestsPerSecond > 0 && st.req.level < 1:
		s.Allowed, s.Limit, s.RetryAfter = false, LimitRequests, st.req.wait(1, lim.RequestsPerSecond)
	case lim.TokensPerMinute > 0 && tokens > lim.TokensPerMinute:
		s.Allowed, s.Limit = false, LimitTooLarge
	case lim.TokensPerMinute > 0 && st.tok.level < float64(tokens):
		s.Allowed, s.Limit, s.RetryAfter = false, LimitTokens, st.tok.wait(float64(tokens), tokRate(lim))
	case lim.MaxConcurrent > 0 && st.own.InFlight+st.peerInFlight >= lim.MaxConcurrent:
		s.Allowed, s.Limit, s.RetryAfter = false, LimitConcurrent, time.Second
	case stream && lim.MaxStreams > 0 && st.own.Streams+st.peerStreams >= lim.MaxStreams:
		s.Allowed, s.Limit, s.RetryAfter = false, LimitStreams, time.Second
	}
	var g *Grant
	if s.Allowed {
		if lim.RequestsPerSecond > 0 {
			st.req.charge(1, reqSize(lim))
		}
		if lim.TokensPerMinute > 0 {
			st.tok.charge(float64(tokens), float64(lim.TokensPerMinute))
		}
		st.own.Requests++
		st.own.Tokens += tokens
		st.own.InFlight++
		st.changed = now
		if stream {
			st.own.Streams++
		}
		g = &Grant{l: l, st: st, tokens: tokens, stream: stream}
	}
	s.fill(st, lim)
	return g, s
}

// Grant is one admitted request's hold on its tenant's limits.
type Grant struct {
	l      *Limiter
	st     *state
	tokens int64
	stream bool
	done   bool
}

// Finish releases the request's in-flight hold and corrects its token
// charge to actual (prompt plus completion tokens from the response's
// usage); a negative actual keeps the estimate. Safe on a nil Grant;
// later calls do nothing.
func (g *Grant) Finish(actual int64) {
	if g == nil {
		return
	}
	st := g.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if g.done {
		return
	}
	g.done = true
	st.changed = g.l.now()
	st.own.InFlight--
	if g.stream {
		st.own.Streams--
	}
	if actual >= 0 && actual != g.tokens {
		st.own.Tokens += actual - g.tokens
		if lim := st.lim; lim.TokensPerMinute > 0 {
			st.tok.charge(float64(actual-g.tokens), float64(lim.TokensPerMinute))
		}
	}
}

// IdleAfter is how long a tenant with nothing in flight and no new
// admission stays in Own: past it, peers need not hear of it again
// until it is used.
const IdleAfter = time.Minute

// Own is this router's use of every tenant it admitted within IdleAfter
// or has in flight, for its peers.
func (l *Limiter) Own() map[string]Usage {
	cutoff := l.now().Add(-IdleAfter)
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[string]Usage, len(l.tenants))
	for name, st := range l.tenants {
		st.mu.Lock()
		if st.own != (Usage{}) && (st.own.InFlight > 0 || st.changed.After(cutoff)) {
			out[name] = st.own
		}
		st.mu.Unlock()
	}
	return out
}

// SetPeer takes one peer's latest report: the growth of its totals since
// its previous report is charged to this router's buckets, and its
// in-flight counts replace the ones it reported before. A tenant's first
// appearance in a peer's reports (a new peer, or a tenant that was idle
// and left out) sets where its totals start: charging a running total in
// full would charge what was refilled long ago, and the cost is the
// admissions of one report interval.
func (l *Limiter) SetPeer(peer string, usage map[string]Usage) {
	now := l.now()
	l.mu.Lock()
	prev := l.peers[peer]
	l.peers[peer] = usage
	l.mu.Unlock()
	for name, u := range usage {
		p, had := prev[name]
		st := l.get(name, false)
		if st == nil {
			continue
		}
		st.mu.Lock()
		st.peerInFlight += u.InFlight - p.InFlight
		st.peerStreams += u.Streams - p.Streams
		if had {
			st.chargePeer(now, u.Requests-p.Requests, u.Tokens-p.Tokens)
		}
		st.mu.Unlock()
	}
	for name, p := range prev {
		if _, still := usage[name]; !still {
			l.dropPeerCounts(name, p)
		}
	}
}

// ForgetPeer drops a peer that stopped reporting: its requests in flight
// no longer count.
func (l *Limiter) ForgetPeer(peer string) {
	l.mu.Lock()
	prev := l.peers[peer]
	delete(l.peers, peer)
	l.mu.Unlock()
	for name, p := range prev {
		l.dropPeerCounts(name, p)
	}
}

func (l *Limiter) dropPeerCounts(name string, p Usage) {
	if st := l.get(name, false); st != nil {
		st.mu.Lock()
		st.peerInFlight -= p.InFlight
		st.peerStreams -= p.Streams
		st.mu.Unlock()
	}
}

// chargePeer charges a peer's admissions to the buckets. Requests never
// shrink; tokens shrink when the peer corrected an estimate downwards.
func (st *state) chargePeer(now time.Time, requests, tokens int64) {
	lim := st.lim
	if lim.RequestsPerSecond > 0 && requests > 0 {
		st.req.refill(now, lim.RequestsPerSecond, reqSize(lim))
		st.req.charge(float64(requests), reqSize(lim))
	}
	if lim.TokensPerMinute > 0 && tokens != 0 {
		st.tok.refill(now, tokRate(lim), float64(lim.TokensPerMinute))
		st.tok.charge(float64(tokens), float64(lim.TokensPerMinute))
	}
}
