package forward

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/lograte"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// RouterEndpoint is one router instance that should receive updates.
type RouterEndpoint struct {
	ID  string // unique per instance (Consul node/service id)
	URL string // base URL of its KV-ingest listener, e.g. http://10.0.0.7:8081
	// Ready says the router's health check passes. A session starts
	// whatever its value; when it turns true, the session sends a snapshot
	// at once, since a router whose check failed and passes again may be
	// a new process behind the same registration, holding nothing.
	Ready bool
}

// RouterSource is the live set of routers. A change is a wake-up on
// Changed, after which Current holds the whole set. ConsulRouters adapts
// consul's watcher; tests use a plain implementation.
type RouterSource interface {
	Changed() <-chan struct{}
	Current() []RouterEndpoint
}

// Config configures a Forwarder; zero values take the defaults.
type Config struct {
	DriverID string // stable id of this driver (its node); required
	Token    string // shared token the routers expect; required
	// FlushInterval is the time between updates (default 250 ms).
	FlushInterval time.Duration
	// KeepAlive is the longest gap between two updates; an empty delta is
	// sent when nothing changed for that long (default 10 s). A new router
	// does not wait for it: its session starts with a snapshot.
	KeepAlive time.Duration
	// MinBackoff and MaxBackoff bound the retry delay after a failed send
	// (defaults 100 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// JoinBackoff caps that delay while a router has accepted nothing yet
	// (default 500 ms): Nomad registers a router's group service before the
	// router's task has even started, so its first tries fail, and the
	// router must get its snapshot as soon as it listens, not up to
	// MaxBackoff later.
	JoinBackoff time.Duration
	// SendTimeout bounds one POST (default 10 s).
	SendTimeout time.Duration
	Client      *http.Client
	Logger      hclog.Logger
}

func (c *Config) defaults() error {
	if c.DriverID == "" {
		return errors.New("forwarder: empty driver id")
	}
	if c.Token == "" {
		return errors.New("forwarder: empty shared token")
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 250 * time.Millisecond
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 10 * time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(10*time.Second, c.MinBackoff)
	}
	if c.JoinBackoff <= 0 {
		c.JoinBackoff = min(500*time.Millisecond, c.MaxBackoff)
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 10 * time.Second
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}

// Forwarder keeps one session per router instance: each starts with a
// snapshot of the Store and then sends net deltas every flush interval,
// resends a snapshot when the router asks (409), retries failed sends with
// backoff, and stops when the router leaves the set.
type Forwarder struct {
	store  *kvevents.Store
	src    RouterSource
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	sessions map[string]*routerSession
}

// RouterStatus describes one router session, for health and metrics.
type RouterStatus struct {
	RouterEndpoint
	Sent      uint64 // updates accepted
	Snapshots uint64 // of those, snapshots
	Failures  uint64 // failed sends
	LastError error  // of the last send; nil after a success
	Synced    bool   // the last send succeeded
	// Refused lists the replicas the router had no room for in the last
	// accepted send: it routes them approximately and asks for a snapshot
	// (409) when room frees; the store keeps their state meanwhile.
	Refused []kvwire.Refusal
}

// Start starts forwarding store to the routers of src until Close.
func Start(store *kvevents.Store, src RouterSource, cfg Config) (*Forwarder, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Forwarder{store: store, src: src, cfg: cfg, cancel: cancel, done: make(chan struct{}), sessions: map[string]*routerSession{}}
	go f.run(ctx)
	return f, nil
}

// Close stops every session and waits for them.
func (f *Forwarder) Close() {
	f.cancel()
	<-f.done
}

// Status returns each session's status, sorted by router ID.
func (f *Forwarder) Status() []RouterStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]RouterStatus, 0, len(f.sessions))
	for _, s := range f.sessions {
		out = append(out, s.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (f *Forwarder) run(ctx context.Context) {
	defer close(f.done)
	defer f.reconcile(ctx, nil)
	f.reconcile(ctx, f.src.Current())
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.src.Changed():
			f.reconcile(ctx, f.src.Current())
		}
	}
}

// reconcile starts sessions for new routers (a snapshot goes at once),
// stops those of routers that left (or moved to another URL), and resends
// a snapshot at once to a router whose check passes again.
func (f *Forwarder) reconcile(ctx context.Context, set []RouterEndpoint) {
	want := make(map[string]RouterEndpoint, len(set))
	for _, r := range set {
		want[r.ID] = r
	}
	f.mu.Lock()
	var stop []*routerSession
	for id, s := range f.sessions {
		r, ok := want[id]
		if !ok || r.URL != s.ep.URL {
			stop = append(stop, s)
			delete(f.sessions, id)
			continue
		}
		if r.Ready && !s.ep.Ready {
			s.resync()
		}
		s.ep.Ready = r.Ready
	}
	for id, r := range want {
		if _, ok := f.sessions[id]; !ok && ctx.Err() == nil {
			f.sessions[id] = f.startSession(ctx, r)
		}
	}
	f.mu.Unlock()
	for _, s := range stop {
		s.stop()
	}
}

// routerSession sends the store's drains to one router.
type routerSession struct {
	ep     RouterEndpoint
	cfg    *Config
	sess   *kvevents.Session
	log    hclog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // resync now: the router may have restarted

	mu sync.Mutex
	st RouterStatus
}

func (f *Forwarder) startSession(ctx context.Context, ep RouterEndpoint) *routerSession {
	ctx, cancel := context.WithCancel(ctx)
	s := &routerSession{
		ep: ep, cfg: &f.cfg, sess: f.store.Open(), cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1),
		log: f.cfg.Logger.With("router", ep.ID, "url", ep.URL),
		st:  RouterStatus{RouterEndpoint: ep},
	}
	go s.run(ctx)
	return s
}

// resync makes the session send a snapshot now, whatever it was doing
// (waiting for the next flush, or backing off after failures).
func (s *routerSession) resync() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *routerSession) stop() {
	s.cancel()
	<-s.done
}

func (s *routerSession) status() RouterStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func newEpoch() uint64 {
	for {
		if e := rand.Uint64(); e != 0 {
			return e
		}
	}
}

func (s *routerSession) run(ctx context.Context) {
	defer close(s.done)
	defer s.sess.Close()
	var (
		pending  *kvwire.Update
		epoch    uint64
		seq      uint64
		lastSent time.Time
		backoff  = s.cfg.MinBackoff
		failLog  = lograte.Limiter{Every: 30 * time.Second}
		joined   bool // the router accepted a send
		// version is the protocol version spoken to this router: the
		// newest, until a router of an older version refuses it.
		version = kvwire.Version
	)
	grow := func(d time.Duration) time.Duration {
		if !joined {
			return min(2*d, s.cfg.JoinBackoff)
		}
		return min(2*d, s.cfg.MaxBackoff)
	}
	timer := time.NewTimer(0) // the first update (a snapshot) goes at once
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.kick:
			// A snapshot replaces whatever was pending.
			timer.Stop()
			pending, backoff = nil, s.cfg.MinBackoff
			s.sess.Resync()
		}
		if pending == nil {
			d := s.sess.Drain()
			if d.Snapshot {
				epoch, seq = newEpoch(), 0
			} else {
				if d.Empty() && time.Since(lastSent) < s.cfg.KeepAlive {
					timer.Reset(s.cfg.FlushInterval)
					continue
				}
				seq++
			}
			pending = &kvwire.Update{Version: version, Driver: s.cfg.DriverID, Epoch: epoch, Seq: seq, Snapshot: d.Snapshot, Replicas: d.Replicas}
		}
		sctx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
		err := kvwire.Send(sctx, s.cfg.Client, s.ep.URL, s.cfg.Token, pending)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.record(pending, err)
		next := s.cfg.FlushInterval
		var refused *kvwire.RefusedError
		switch {
		case errors.As(err, &refused):
			// Applied but for replicas the router has no room for: it asks
			// for a snapshot once it has, so the session goes on.
			failLog.Do(func(n int) { s.log.Warn("router has no room for some replicas", "error", err, "suppressed", n) })
			pending, lastSent, backoff, joined = nil, time.Now(), s.cfg.MinBackoff, true
		case err == nil:
			pending, lastSent, backoff, joined = nil, time.Now(), s.cfg.MinBackoff, true
		case version > 1 && kvwire.RefusedVersion(err):
			// An older router: speak the version before, from a snapshot.
			version, pending, next = version-1, nil, 0
			s.log.Info("router refused the kv protocol version; stepping down", "router", s.ep.String(), "version", version)
			s.sess.Resync()
		case errors.Is(err, kvwire.ErrSnapshotRequired):
			// The router restarted or lost our session: start over, in the
			// newest version (a restarted router may speak it).
			s.log.Info("router asked for a snapshot", "reason", err)
			version, next = kvwire.Version, 0
			if pending.Snapshot { // a router refusing snapshots: do not spin
				next, backoff = backoff, grow(backoff)
			}
			pending = nil
			s.sess.Resync()
		case errors.Is(err, kvwire.ErrMalformed):
			// Retrying the same bytes cannot help; a snapshot might.
			s.log.Error("router rejected an update", "error", err)
			pending = nil
			s.sess.Resync()
			next, backoff = backoff, grow(backoff)
		default:
			failLog.Do(func(n int) { s.log.Warn("sending kv update failed; retrying", "error", err, "suppressed", n) })
			next, backoff = backoff, grow(backoff)
		}
		timer.Reset(next)
	}
}

func (s *routerSession) record(u *kvwire.Update, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var refused *kvwire.RefusedError
	s.st.Refused = nil
	if errors.As(err, &refused) {
		s.st.Refused = refused.Refused
		err = nil // applied: the refusals are in Refused
	}
	s.st.LastError, s.st.Synced = err, err == nil
	if err != nil {
		s.st.Failures++
		return
	}
	s.st.Sent++
	if u.Snapshot {
		s.st.Snapshots++
	}
}

// String names the endpoint for logs.
func (r RouterEndpoint) String() string { return fmt.Sprintf("%s (%s)", r.ID, r.URL) }
