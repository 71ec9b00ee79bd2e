package peerbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/peers"
	"github.com/llmgw/llmgw/router/ratelimit"
)

// Options describe one measurement; zero values take the defaults.
type Options struct {
	// Routers is how many routers share their loads (at least 2).
	Routers int
	// Replicas is the fleet's replica count; each router's requests go to
	// random ones (default 200).
	Replicas int
	// InFlight is how many requests each router keeps in flight (default
	// 32): with Replicas 200, each message lists about 30 replicas.
	InFlight int
	// Tenants, when above 0, makes every message version 2 with this many
	// tenants' usage, changing with the load (default 0: version 1).
	Tenants int
	// Churn is how often each router starts one request and ends its
	// oldest, so the load changes at every publisher tick (default 5 ms).
	Churn time.Duration
	// Interval is the publishers' peers.PublisherOptions.Interval
	// (default the package's, 50 ms); MaxRate their MaxRate (0: theirs).
	Interval time.Duration
	MaxRate  int
	// Legacy runs the design before the compact wire: JSON between every
	// pair, and the table handing the load tracker its sum on every
	// message.
	Legacy bool
	// Alone runs the routers and their load without sending anything:
	// what is left of CPUPerRouter is the load generators' and the
	// publishers' ticks, to subtract from a run that shares.
	Alone bool
	// Warmup runs before counting starts (default 1 s); Duration is the
	// window counted (default 3 s).
	Warmup, Duration time.Duration
}

// Result is what one router sent and spent, averaged over the routers.
type Result struct {
	Routers int
	// MessagesPerSec and BytesPerSec are what one router received (and,
	// as every router sends as much as it receives, sent) per second;
	// bytes are the HTTP requests as read off the connection, headers
	// included.
	MessagesPerSec, BytesPerSec float64
	// CPUPerRouter is the process CPU time (user and system) over the
	// window divided by Routers and the window: the fraction of one core
	// one router spent on peer sharing, its load generator included.
	CPUPerRouter float64
	// CPUPerMessage is the process CPU time per message, sending and
	// receiving it (and the load generators' share) included; on a busy
	// machine the routers fall behind their rate, and this stays the
	// steadier figure.
	CPUPerMessage time.Duration
	// NominalPerSec is the rate each router would send at if it kept up:
	// one message per peer per interval, capped by the rate budget.
	NominalPerSec float64
	// AtNominal is CPUPerMessage × NominalPerSec: the fraction of one core
	// a router spends at its nominal rate.
	AtNominal float64
	// Converged says every router counted every other router as a peer
	// at the end.
	Converged bool
}

func (o *Options) defaults() error {
	if o.Routers < 2 {
		return fmt.Errorf("peerbench: %d routers: at least 2", o.Routers)
	}
	if o.Replicas <= 0 {
		o.Replicas = 200
	}
	if o.InFlight <= 0 {
		o.InFlight = 32
	}
	if o.Churn <= 0 {
		o.Churn = 5 * time.Millisecond
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	return nil
}

// router is one router's peer side.
type router struct {
	id      string
	tracker *load.Tracker
	table   *peers.Table
	srv     *http.Server
	url     string
	pub     *peers.Publisher
	usage   *usage
}

// Run measures one configuration and stops everything it started before
// it returns.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.defaults(); err != nil {
		return Result{}, err
	}
	const token = "peerbench"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wire counters
	rs := make([]*router, o.Routers)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		stopRouters(rs)
	}()
	for i := range rs {
		r, err := newRouter(fmt.Sprintf("router-%02d", i), token, &wire)
		if err != nil {
			return Result{}, err
		}
		rs[i] = r
		if !o.Legacy { // as router/server runs its table
			r.table.SetPublishEvery(publishEvery)
			wg.Add(1)
			go func() {
				defer wg.Done()
				flush(ctx, r.table)
			}()
		}
	}
	if err := startPublishers(ctx, rs, token, o, &wg); err != nil {
		return Result{}, err
	}
	if !sleep(ctx, o.Warmup) {
		return Result{}, ctx.Err()
	}
	return measure(ctx, rs, &wire, o)
}

// stopRouters closes every publisher, then every server; it skips what a
// failed start left unset.
func stopRouters(rs []*router) {
	for _, r := range rs {
		if r != nil && r.pub != nil {
			r.pub.Close()
		}
	}
	for _, r := range rs {
		if r != nil && r.srv != nil {
			_ = r.srv.Close()
		}
	}
}

// startPublishers starts each router's publisher, sending to every other
// router (to none when o.Alone), and its load generator on wg; both stop
// when ctx ends.
func startPublishers(ctx context.Context, rs []*router, token string, o Options, wg *sync.WaitGroup) error {
	targets := make([]peers.Target, len(rs))
	for i, r := range rs {
		targets[i] = peers.Target{ID: r.id, URL: r.url}
	}
	for i, r := range rs {
		others := append(append([]peers.Target(nil), targets[:i]...), targets[i+1:]...)
		if o.Alone {
			others = nil
		}
		opts := peers.PublisherOptions{
			Self: r.id, Token: token, Interval: o.Interval, MaxRate: o.MaxRate, JSONOnly: o.Legacy,
			Own: r.tracker.Own, Targets: func() []peers.Target { return others },
		}
		if o.Tenants > 0 {
			r.usage = newUsage(o.Tenants)
			opts.Tenants = r.usage.own
		}
		var err error
		if r.pub, err = peers.StartPublisher(ctx, opts); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			churn(ctx, r, o)
		}()
	}
	return nil
}

// measure counts the messages, bytes and CPU time over o.Duration and
// averages them over the routers.
func measure(ctx context.Context, rs []*router, wire *counters, o Options) (Result, error) {
	m0, b0, c0 := wire.messages.Load(), wire.bytes.Load(), CPUTime()
	t0 := time.Now()
	if !sleep(ctx, o.Duration) {
		return Result{}, ctx.Err()
	}
	m1, b1, c1 := wire.messages.Load(), wire.bytes.Load(), CPUTime()
	secs := time.Since(t0).Seconds()
	n := float64(o.Routers)
	res := Result{
		Routers:        o.Routers,
		MessagesPerSec: float64(m1-m0) / secs / n,
		BytesPerSec:    float64(b1-b0) / secs / n,
		CPUPerRouter:   (c1 - c0).Seconds() / secs / n,
		Converged:      true,
	}
	if m1 > m0 {
		res.CPUPerMessage = (c1 - c0) / time.Duration(m1-m0)
	}
	res.NominalPerSec = nominal(o)
	res.AtNominal = res.CPUPerMessage.Seconds() * res.NominalPerSec
	for _, r := range rs {
		if r.table.Peers() != o.Routers-1 {
			res.Converged = false
		}
	}
	if o.Alone {
		res.NominalPerSec, res.AtNominal = 0, 0
	}
	return res, nil
}

// nominal is one router's message rate with o's interval and budget:
// one message per peer per peers.PublisherOptions.Period.
func nominal(o Options) float64 {
	n := o.Routers - 1
	return float64(n) / peers.PublisherOptions{Interval: o.Interval, MaxRate: o.MaxRate}.Period(n).Seconds()
}

func newRouter(id, token string, wire *counters) (*router, error) {
	tr := load.NewTracker()
	tab, err := peers.NewTable(id, token, tr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("peerbench: listen: %w", err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wire.messages.Add(1)
		tab.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(CountBytes(ln, &wire.bytes)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err) // a loopback listener does not fail
		}
	}()
	return &router{id: id, tracker: tr, table: tab, srv: srv, url: "http://" + ln.Addr().String()}, nil
}

// publishEvery is router/server's: the peers' sum reaches the load
// tracker at most every 50 ms.
const publishEvery = 50 * time.Millisecond

// flush hands tab's sum to its tracker every publishEvery until ctx ends.
func flush(ctx context.Context, tab *peers.Table) {
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			tab.Flush()
		}
	}
}

// churn keeps o.InFlight requests in flight on r, from the start,
// replacing the oldest by one to a random replica every o.Churn.
func churn(ctx context.Context, r *router, o Options) {
	t := time.NewTicker(o.Churn)
	defer t.Stop()
	var ends []func()
	defer func() {
		for _, end := range ends {
			end()
		}
	}()
	begin := func() {
		_, end := r.tracker.BeginPrefill(fmt.Sprintf("replica-%04d", rand.IntN(o.Replicas)), 1000+rand.IntN(8000), rand.IntN(4000))
		ends = append(ends, end)
	}
	for len(ends) < o.InFlight-1 { // start in the steady state
		begin()
	}
	for {
		begin()
		if len(ends) > o.InFlight {
			ends[0]()
			ends = ends[1:]
		}
		if r.usage != nil {
			r.usage.charge()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// usage is a router's changing use of its tenants' limits.
type usage struct {
	mu sync.Mutex
	u  map[string]ratelimit.Usage
}

func newUsage(n int) *usage {
	u := &usage{u: make(map[string]ratelimit.Usage, n)}
	for i := range n {
		u.u[fmt.Sprintf("tenant-%03d", i)] = ratelimit.Usage{}
	}
	return u
}

func (u *usage) charge() {
	u.mu.Lock()
	defer u.mu.Unlock()
	name := fmt.Sprintf("tenant-%03d", rand.IntN(len(u.u)))
	v := u.u[name]
	v.Requests++
	v.Tokens += 1000
	v.InFlight = rand.IntN(4)
	u.u[name] = v
}

func (u *usage) own() map[string]ratelimit.Usage {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]ratelimit.Usage, len(u.u))
	for k, v := range u.u {
		out[k] = v
	}
	return out
}
