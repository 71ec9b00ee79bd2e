package kvtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// Router is a real HTTP server running kvwire's Receiver into a Mirror;
// Swap replaces both, as a router restart does.
type Router struct {
	srv     *httptest.Server
	mu      sync.Mutex
	mirror  *kvwire.Mirror
	handler http.Handler
	// Down makes it answer 503, as an overloaded or starting router.
	Down atomic.Bool
}

// StartRouter starts a Router that takes token, closed when t ends. It
// answers /health with 200 for Consul's HTTP check.
func StartRouter(t *testing.T, token string) *Router {
	t.Helper()
	r := &Router{}
	r.Swap(t, token)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/health" { // for Consul's HTTP check
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Down.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		h := r.handler
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the router's base URL.
func (r *Router) URL() string { return r.srv.URL }

// Swap replaces the receiver and its mirror by empty ones taking token.
func (r *Router) Swap(t *testing.T, token string) {
	t.Helper()
	m := kvwire.NewMirror()
	rec, err := kvwire.NewReceiver(token, m)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.mirror, r.handler = m, rec
	r.mu.Unlock()
}

// Blocks is what the router holds for replica from driver, sorted.
func (r *Router) Blocks(driver, replica string) []kvevents.Block {
	r.mu.Lock()
	m := r.mirror
	r.mu.Unlock()
	return mirrored(m, driver, replica)
}

// WaitMirror waits until r holds for replica, from driver, what s holds.
func WaitMirror(t *testing.T, r *Router, driver string, s *kvevents.Store, replica string) {
	t.Helper()
	poll.Until(t, "router mirror to match the store", func() bool {
		return slices.Equal(r.Blocks(driver, replica), s.Blocks(replica))
	})
}
