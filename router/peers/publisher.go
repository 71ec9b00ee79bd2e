package peers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/ratelimit"
)

// DefaultInterval is how soon a change in the own load goes out by
// default.
const DefaultInterval = 50 * time.Millisecond

// DefaultKeepAlive is how often an unchanged load is resent by default.
// A receiver's expiry must be a few times longer.
const DefaultKeepAlive = time.Second

// DefaultMaxRate is how many messages a router sends per second, to all
// its peers together, while its load keeps changing: up to 5 peers each
// get every change at the 50 ms interval; with more, each peer gets one
// every peers/DefaultMaxRate seconds (310 ms at 32 routers). As every
// router keeps to it, it bounds what each receives too, so a router's
// cost stops growing with the fleet: 100 messages out and 100 in cost it
// about 4% of a core on a busy shared host (docs/BENCHMARKS.md).
const DefaultMaxRate = 100

// Target is a peer router's ingest endpoint.
type Target struct {
	ID  string // its Consul instance (node/service id)
	URL string // its ingest listener's base URL, e.g. http://10.0.0.2:8081
}

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	// Self is this router's instance id (Message.Router), Token the
	// fleet's shared token.
	Self, Token string
	// Interval is how often the own load is compared with what was sent
	// last: a change goes out at the next tick, so peers see it at most an
	// Interval (plus a post) late. Default DefaultInterval.
	Interval time.Duration
	// MaxRate caps the messages sent per second to all peers together:
	// with more peers than MaxRate × Interval, a change goes out once
	// peers/MaxRate has passed since the last (never later than
	// KeepAlive). 0 takes DefaultMaxRate; below 0 there is no cap, every
	// peer gets every change at the next Interval.
	MaxRate int
	// KeepAlive resends an unchanged load this often, so peers keep
	// counting it (their expiry must be a few times longer). Default
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// Own returns this router's own requests in flight per replica
	// (load.Tracker.Own); Targets the peers to send them to, without
	// this router.
	Own     func() map[string]load.Peer
	Targets func() []Target
	// Tenants, when set, returns this router's use of its tenants' limits
	// (ratelimit.Limiter.Own); messages then have version 2.
	Tenants func() map[string]ratelimit.Usage
	// JSONOnly keeps to the JSON wire with every peer, as routers from
	// before the compact wire do (for tests and benchmarks of mixed
	// fleets).
	JSONOnly bool
	// Client posts the messages; default one with a 2 s timeout.
	Client *http.Client
	Logger hclog.Logger
}

// Publisher sends this router's load to its peers. Each peer gets the
// newest message once: one post at a time per peer, a failed post retried
// at the next tick, a new peer sent the current message at once.
type Publisher struct {
	opts      PublisherOptions
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu      sync.Mutex
	seq     uint64
	own     map[string]load.Peer // the load of seq
	tenants []Tenant             // and the tenants' usage
	body    []byte               // the JSON message, made when a target needs it
	compact compactBody          // msg on the compact wire, less the names
	dir     *directory           // the ids compact messages index
	sent    map[string]uint64    // per target: the seq it has
	busy    map[string]bool      // per target: a post is running
	failing map[string]string    // per target: the error of its last post
	wire    map[string]bool      // per target: it reads the compact wire
	holds   map[string]held      // per target: the directory names it holds
}

// held is how much of the publisher's directory a target acknowledged.
type held struct {
	gen   uint64
	names int
}

// StartPublisher starts publishing until ctx ends or Close is called.
func StartPublisher(ctx context.Context, opts PublisherOptions) (*Publisher, error) {
	if opts.Self == "" || opts.Token == "" || opts.Own == nil || opts.Targets == nil {
		return nil, fmt.Errorf("peer publisher: Self, Token, Own and Targets are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.MaxRate == 0 {
		opts.MaxRate = DefaultMaxRate
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 2 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Publisher{opts: opts, cancel: cancel, sent: map[string]uint64{}, busy: map[string]bool{}, failing: map[string]string{},
		wire: map[string]bool{}, holds: map[string]held{}, dir: newDirectory()}
	p.wg.Add(1)
	go p.run(ctx)
	return p, nil
}

// Close stops publishing, then tells every peer, within a second, that
// this router has nothing in flight, so its load stops counting at once
// rather than at the peers' expiry. Call it once the router serves no more
// requests.
func (p *Publisher) Close() {
	p.closeOnce.Do(func() {
		p.cancel()
		p.wg.Wait()
		p.next(nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		p.send(ctx, p.opts.Targets())
		p.wg.Wait()
		cancel()
		p.opts.Client.CloseIdleConnections()
	})
}

func (p *Publisher) run(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.Interval)
	defer t.Stop()
	var last map[string]load.Peer
	var lastTenants map[string]ratelimit.Usage
	var lastAt time.Time
	for {
		targets := p.opts.Targets()
		now := time.Now()
		// The own load is read only when a message may go out: within the
		// gap nothing would be sent, and at a few thousand replicas
		// reading and comparing it costs a millisecond.
		if since := now.Sub(lastAt); last == nil || since >= p.gap(len(targets)) {
			own := p.opts.Own()
			var tenants map[string]ratelimit.Usage
			if p.opts.Tenants != nil {
				tenants = p.opts.Tenants()
			}
			changed := last == nil || !maps.Equal(own, last) || !maps.Equal(tenants, lastTenants)
			if changed || since >= p.opts.KeepAlive {
				p.next(own, tenants)
				last, lastTenants, lastAt = own, tenants, now
			}
		}
		p.send(ctx, targets)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gap is the least time between two messages with this many peers: the
// Interval, or longer so that they get at most MaxRate messages a second
// together, but never longer than KeepAlive.
func (p *Publisher) gap(peers int) time.Duration { return gap(p.opts.MaxRate, p.opts.KeepAlive, peers) }

func gap(maxRate int, keepAlive time.Duration, peers int) time.Duration {
	if maxRate <= 0 || peers <= 0 {
		return 0
	}
	return min(time.Duration(peers)*time.Second/time.Duration(maxRate), keepAlive)
}

// Period is how often a publisher with these options sends each of its
// peers a message while its load changes at every tick: the gap rounded
// up to whole Intervals, as the publisher looks at its load only at its
// ticks (350 ms at 31 peers with the defaults, the 310 ms gap rounded
// up). Zero fields take the defaults StartPublisher gives them. What a
// fleet's peer sharing costs follows from it, so benchmarks that price
// it (router/scalebench) take their rate from here, not a copy.
func (o PublisherOptions) Period(peers int) time.Duration {
	interval, keepAlive, maxRate := o.Interval, o.KeepAlive, o.MaxRate
	if interval <= 0 {
		interval = DefaultInterval
	}
	if keepAlive <= 0 {
		keepAlive = DefaultKeepAlive
	}
	if maxRate == 0 {
		maxRate = DefaultMaxRate
	}
	g := gap(maxRate, keepAlive, peers)
	return max(interval, (g+interval-1)/interval*interval)
}

// next makes own and tenants the message to send. The compact form is
// made at once; the JSON one only when a target needs it (bodyLocked).
func (p *Publisher) next(own map[string]load.Peer, tenants map[string]ratelimit.Usage) {
	var ts []Tenant
	if p.opts.Tenants != nil {
		names := slices.Sorted(maps.Keys(tenants))
		if len(names) > MaxTenants {
			p.opts.Logger.Warn("more active tenants than one peer message carries; the rest are limited per router", "active", len(names), "max", MaxTenants)
			names = names[:MaxTenants]
		}
		ts = tenantsOf(tenants, names)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	p.own, p.tenants, p.body = own, ts, nil
	p.dir.fit(own)
	reps := make([]compactReplica, 0, len(own))
	for id, l := range own {
		reps = append(reps, compactReplica{Index: uint32(p.dir.at(id)),
			InFlight: clampCount(l.InFlight), InFlightTokens: clampCount(l.InFlightTokens), PrefillTokens: clampCount(l.PrefillTokens)})
	}
	slices.SortFunc(reps, func(a, b compactReplica) int { return int(a.Index) - int(b.Index) })
	p.compact = compactBody{router: p.opts.Self, seq: p.seq, gen: p.dir.gen, tail: appendCompactTail(nil, reps, ts)}
}

// clampCount is a count as a peer takes it: a count past maxCount is a
// bug the receiver would refuse the whole message for.
func clampCount(v int) uint32 { return uint32(min(max(v, 0), maxCount)) }

// jsonLocked is the current message on the JSON wire: version 2 with
// tenants when the router has limits to share, else version 1.
func (p *Publisher) jsonLocked() ([]byte, error) {
	m := Message{Version: MinVersion, Router: p.opts.Self, Seq: p.seq, Replicas: make([]Replica, 0, len(p.own)), Tenants: p.tenants}
	if p.opts.Tenants != nil {
		m.Version = Version
	}
	for _, id := range slices.Sorted(maps.Keys(p.own)) {
		l := p.own[id]
		m.Replicas = append(m.Replicas, Replica{ID: id, InFlight: l.InFlight, InFlightTokens: l.InFlightTokens, PrefillTokens: l.PrefillTokens})
	}
	return m.encode()
}

// bodyLocked is the current message for a target: compact with the
// directory names it lacks where it reads that wire, else JSON.
func (p *Publisher) bodyLocked(id string) (body []byte, names int, compact bool, err error) {
	if p.wire[id] && !p.opts.JSONOnly {
		from := 0
		if h := p.holds[id]; h.gen == p.compact.gen && h.names <= len(p.dir.names) {
			from = h.names
		}
		return p.compact.encode(p.dir.names, from), len(p.dir.names), true, nil
	}
	if p.body == nil {
		b, err := p.jsonLocked()
		if err != nil {
			return nil, 0, false, err
		}
		p.body = b
	}
	return p.body, 0, false, nil
}

// send starts a post of the current message to each target that lacks it
// and has none running, and forgets targets that left.
func (p *Publisher) send(ctx context.Context, targets []Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	live := make(map[string]bool, len(targets))
	for _, tg := range targets {
		live[tg.ID] = true
		if p.busy[tg.ID] || p.sent[tg.ID] >= p.seq {
			continue
		}
		body, names, compact, err := p.bodyLocked(tg.ID)
		if err != nil {
			p.opts.Logger.Error("peer load not sent", "error", err)
			continue
		}
		p.busy[tg.ID] = true
		p.wg.Add(1)
		go p.post(ctx, tg, sending{seq: p.seq, body: body, compact: compact, gen: p.compact.gen, names: names})
	}
	for id := range p.sent {
		if !live[id] && !p.busy[id] {
			delete(p.sent, id)
			delete(p.failing, id)
			delete(p.wire, id)
			delete(p.holds, id)
		}
	}
}

// sending is one post: the message and, when compact, the directory it
// leaves the target holding.
type sending struct {
	seq     uint64
	body    []byte
	compact bool
	gen     uint64
	names   int
}

func (p *Publisher) post(ctx context.Context, tg Target, s sending) {
	defer p.wg.Done()
	code, wire, err := p.do(ctx, tg.URL+Path, s)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.busy, tg.ID)
	switch {
	case code == http.StatusConflict && s.compact:
		// It lost the directory (it restarted, or a post failed on the
		// way back): restate it at the next tick.
		delete(p.holds, tg.ID)
	case code == http.StatusNoContent && s.compact:
		p.holds[tg.ID] = held{gen: s.gen, names: s.names}
	}
	if code != 0 {
		// An answer says which wire the target reads; one without the
		// header is from a router that reads only JSON.
		p.wire[tg.ID] = wire == WireCompact
	}
	if err != nil {
		// Warn once per kind of failure (a wrong token or an unreachable
		// peer would otherwise log at every tick), then retry quietly.
		if ctx.Err() == nil && p.failing[tg.ID] != err.Error() {
			p.failing[tg.ID] = err.Error()
			p.opts.Logger.Warn("peer load not accepted; retrying at every tick", "peer", tg.ID, "error", err)
		}
		return
	}
	if _, was := p.failing[tg.ID]; was {
		delete(p.failing, tg.ID)
		p.opts.Logger.Info("peer load accepted again", "peer", tg.ID)
	}
	p.sent[tg.ID] = max(p.sent[tg.ID], s.seq)
}

// do posts one message; code is the answer's status (0 when none came)
// and wire its HeaderWire.
func (p *Publisher) do(ctx context.Context, url string, s sending) (code int, wire string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(s.body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.compact {
		req.Header.Set("Content-Type", ContentTypeCompact)
	}
	req.Header.Set("Authorization", "Bearer "+p.opts.Token)
	resp, err := p.opts.Client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusNoContent {
		return resp.StatusCode, resp.Header.Get(HeaderWire), fmt.Errorf("%s answered %s: %s", url, resp.Status, bytes.TrimSpace(msg))
	}
	return resp.StatusCode, resp.Header.Get(HeaderWire), nil
}
