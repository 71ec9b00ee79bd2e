package scheduler

import (
	"context"
	"fmt"
	"net/textproto"
	"sync"
	"time"
)

// SessionParams tune session affinity.
type SessionParams struct {
	// Header names the request header carrying the session id; the router
	// reads it into Request.SessionID.
	Header string `json:"header"`
	// IdleTTL forgets a session this long after its last request.
	IdleTTL Duration `json:"idle_ttl"`
	// MaxSessions caps remembered sessions.
	MaxSessions int `json:"max_sessions"`
}

func defaultSessionParams() SessionParams {
	return SessionParams{Header: "X-Session-Id", IdleTTL: Duration(10 * time.Minute), MaxSessions: 100_000}
}

func (p *SessionParams) validate() error {
	if p.Header == "" {
		return fmt.Errorf("header must not be empty")
	}
	p.Header = textproto.CanonicalMIMEHeaderKey(p.Header)
	if p.IdleTTL <= 0 {
		return fmt.Errorf("idle_ttl must be positive")
	}
	if p.MaxSessions <= 0 {
		return fmt.Errorf("max_sessions must be positive")
	}
	return nil
}

// SessionScorer keeps a session on the replica that served its last request
// (score 1 there, 0 elsewhere) until the session has been idle for IdleTTL.
// When the replica is gone or filtered out the session moves, and sticks to
// its new replica.
type SessionScorer struct {
	name TypedName
	p    SessionParams
	now  func() time.Time

	mu       sync.Mutex
	sessions map[string]sessionEntry
}

type sessionEntry struct {
	replica string
	last    time.Time
}

func newSessionScorer(name TypedName, p SessionParams, now func() time.Time) *SessionScorer {
	return &SessionScorer{name: name, p: p, now: now, sessions: map[string]sessionEntry{}}
}

func (s *SessionScorer) TypedName() TypedName { return s.name }

// Header is the request header the router should read the session id from.
func (s *SessionScorer) Header() string { return s.p.Header }

func (s *SessionScorer) Score(_ context.Context, req *Request, cands []Candidate, scores []float64) {
	if req.SessionID == "" {
		return
	}
	s.mu.Lock()
	e, ok := s.sessions[req.SessionID]
	s.mu.Unlock()
	if !ok || s.now().Sub(e.last) > time.Duration(s.p.IdleTTL) {
		return
	}
	for i := range cands {
		if cands[i].ID == e.replica {
			scores[i] = 1
		}
	}
}

// Routed binds the session to chosen and refreshes its idle timer.
func (s *SessionScorer) Routed(req *Request, chosen *Candidate) {
	if req.SessionID == "" {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[req.SessionID]; !ok && len(s.sessions) >= s.p.MaxSessions {
		s.evict(now)
	}
	s.sessions[req.SessionID] = sessionEntry{replica: chosen.ID, last: now}
}

// evict drops idle sessions; if none is idle it drops the least recently
// used one, so the map never exceeds MaxSessions.
func (s *SessionScorer) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for id, e := range s.sessions {
		if now.Sub(e.last) > time.Duration(s.p.IdleTTL) {
			delete(s.sessions, id)
			continue
		}
		if oldest == "" || e.last.Before(oldestAt) {
			oldest, oldestAt = id, e.last
		}
	}
	if len(s.sessions) >= s.p.MaxSessions {
		delete(s.sessions, oldest)
	}
}

var (
	_ Scorer   = (*SessionScorer)(nil)
	_ Observer = (*SessionScorer)(nil)
)
