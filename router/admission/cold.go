package admission

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/router/tenant"
)

// Starter brings a model's replicas up from zero and takes them down
// again: the router's Nomad scaler. Start and Stop report whether their
// call changed the count; one that finds it already moved (by another
// router) reports false and no error, so that of routers that call at
// once exactly one reports true.
type Starter interface {
	Start(ctx context.Context, model string) (changed bool, err error)
	// Stop leaves alone a model started (by any router) within its idle
	// time, whose replicas other routers' requests may be waiting for.
	Stop(ctx context.Context, model string) (changed bool, err error)
	// Count is how many replicas the model's job asks for now.
	Count(ctx context.Context, model string) (int, error)
}

// startCallTimeout bounds one Start call, which outlives the request
// that makes it. startRecheck is how often waiters call Start again after
// one succeeded, in case the count went back to zero (another router's
// scale-down that crossed this start) while they wait.
const (
	startCallTimeout = 30 * time.Second
	startRecheck     = 30 * time.Second
)

// Model states, as the status page shows them.
const (
	StateCold     = "cold"     // no replica, none asked for
	StateStarting = "starting" // replicas asked for, none passing its check yet
	StateWarm     = "warm"     // a replica passes its check
)

// Stage is one step of a request held for a cold model, told to
// ColdOptions.Stage when it ends: "scale" (the scale-up call, made by the
// request that found the model cold) or "wait" (the whole hold, up to a
// replica passing its check, a rejection or the client leaving); and
// "scale_down", Reap's call, with Reap's context.
type Stage struct {
	Model, Name string
	Start       time.Time
	Took        time.Duration
	// Changed is, for the scale calls, whether this call moved the count.
	Changed bool
	// Result is, for "wait", ready, queue_full, tenant_queue_full,
	// timeout or canceled; Err, for the scale calls, the call's error.
	Result string
	Err    error
}

// ColdOptions configure a Cold.
type ColdOptions struct {
	// Idle lists the models that scale from and to zero, each with how
	// long it stays up after its last request (0: it is never stopped).
	Idle map[string]time.Duration
	// Timeout is how long a request waits for a replica (default 5 min).
	Timeout time.Duration
	// MaxWaiting bounds one model's waiters (default 64); MaxPerTenant one
	// tenant's over every model (0: MaxWaiting).
	MaxWaiting, MaxPerTenant int
	// Poll is how often waiters look for a ready replica (default 500 ms);
	// a failed start is tried again at most every Retry (5 s), a
	// successful one every 30 s while requests wait.
	Poll, Retry time.Duration
	// Ready reports whether a replica of model passes its check: the
	// router's replica set, which holds only those. Required.
	Ready func(model string) bool
	// InFlight reports whether any router (this one or a peer) has a
	// request in flight to model's replicas; nil: never.
	InFlight func(model string) bool
	Starter  Starter // required
	Metrics  *ColdMetrics
	// Stage, when set, is told of each stage of a held request on the
	// request's goroutine with its context: the hook that tracing wraps.
	Stage func(ctx context.Context, s Stage)
	// Now is the clock (time.Now); tests set it.
	Now func() time.Time
}

// Cold holds requests for a model at zero replicas while its job scales
// up, and scales idle models back to zero (Reap). Its zero value is not
// usable; call NewCold.
type Cold struct {
	o      ColdOptions
	models map[string]*coldModel // fixed at NewCold: read without mu

	mu        sync.Mutex // guards what follows and coldModel's plain fields
	perTenant map[string]int
}

type coldModel struct {
	name string
	idle time.Duration
	// last is when this router last had a request for the model, or saw
	// one in flight anywhere, in Unix nanoseconds; the router's start
	// counts as one. stopped is set when Reap stopped the model (or found
	// it at zero) since. Both are atomic: every request for the model
	// touches them, warm or not, and takes no lock.
	last    atomic.Int64
	stopped atomic.Bool

	// Guarded by Cold.mu.
	waiting  int
	starting bool      // a Start call is in flight
	tried    time.Time // when the last Start call began
	failed   bool      // and it failed
	asked    bool      // the job asks for replicas, as last read or set
}

// ColdRejected is Hold's answer to a request it cannot hold (the model's
// or the tenant's share of the hold is full: the router's 429) or whose
// replica did not pass its check in time (503).
type ColdRejected struct {
	// Reason is queue_full, tenant_queue_full or timeout.
	Reason     string
	RetryAfter time.Duration
	Detail     string
}

func (r *ColdRejected) Error() string { return r.Detail }

// TimedOut reports whether the request waited its whole timeout: the
// model is starting but not ready, a 503 rather than backpressure.
func (r *ColdRejected) TimedOut() bool { return r.Reason == "timeout" }

// NewCold returns a Cold for the models of o.Idle.
func NewCold(o ColdOptions) (*Cold, error) {
	if o.Ready == nil || o.Starter == nil {
		return nil, fmt.Errorf("admission: cold start needs Ready and Starter")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = 64
	}
	if o.MaxPerTenant <= 0 {
		o.MaxPerTenant = o.MaxWaiting
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Retry <= 0 {
		o.Retry = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Cold{o: o, models: map[string]*coldModel{}, perTenant: map[string]int{}}
	now := o.Now()
	for name, idle := range o.Idle {
		m := &coldModel{name: name, idle: idle}
		m.last.Store(now.UnixNano())
		c.models[name] = m
	}
	return c, nil
}

// Models are the models that scale from zero, sorted.
func (c *Cold) Models() []string {
	out := make([]string, 0, len(c.models))
	for name := range c.models {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Knows reports whether model scales from zero.
func (c *Cold) Knows(model string) bool { return c.models[model] != nil }

// State is model's state (StateCold, StateStarting, StateWarm); "" for a
// model that does not scale from zero.
func (c *Cold) State(model string) string {
	m := c.models[model]
	if m == nil {
		return ""
	}
	if c.o.Ready(model) {
		return StateWarm
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.asked || m.starting {
		return StateStarting
	}
	return StateCold
}

// Waiting is how many requests wait for model's first replica.
func (c *Cold) Waiting(model string) int {
	m := c.models[model]
	if m == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.waiting
}

// Hold returns once a replica of model passes its check, at once when one
// does or model does not scale from zero. Otherwise the request waits, in
// its model's and its tenant's (tenant.FromContext) bounded share, while
// the first waiter asks the Starter for replicas; it gets a *ColdRejected
// when a share is full or Timeout passes, and ctx's error, wrapped, when
// the client leaves. Every call for model counts as a request for its
// idle time.
func (c *Cold) Hold(ctx context.Context, model string) error {
	m := c.models[model]
	if m == nil {
		return nil
	}
	c.touch(m)
	if c.o.Ready(model) {
		return nil
	}
	start := c.o.Now()
	t := tenant.FromContext(ctx)
	if rej := c.join(m, t.Name); rej != nil {
		c.stage(ctx, Stage{Model: model, Name: "wait", Start: start, Result: rej.Reason})
		return rej
	}
	result, err := c.wait(ctx, m)
	c.leave(m, t.Name)
	if err == nil {
		c.touch(m) // its idle time runs from now, not from its arrival
	}
	took := c.o.Now().Sub(start)
	c.stage(ctx, Stage{Model: model, Name: "wait", Start: start, Took: took, Result: result})
	if mt := c.o.Metrics; mt != nil {
		mt.Wait.WithLabelValues(model, result).Observe(took.Seconds())
	}
	return err
}

// touch records a request for m now.
func (c *Cold) touch(m *coldModel) {
	m.last.Store(c.o.Now().UnixNano())
	if m.stopped.Load() {
		m.stopped.Store(false)
	}
}

// join counts a waiter for m of tenant name, or refuses it over a share.
func (c *Cold) join(m *coldModel, name string) *ColdRejected {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rej *ColdRejected
	switch {
	case m.waiting >= c.o.MaxWaiting:
		rej = &ColdRejected{Reason: "queue_full", RetryAfter: c.o.Retry,
			Detail: fmt.Sprintf("%s is starting and %d requests already wait for it", m.name, m.waiting)}
	case c.perTenant[name] >= c.o.MaxPerTenant:
		rej = &ColdRejected{Reason: "tenant_queue_full", RetryAfter: c.o.Retry,
			Detail: fmt.Sprintf("%s is starting and this key already has %d requests waiting for a model to start", m.name, c.perTenant[name])}
	}
	if rej != nil {
		c.count(m.name, rej.Reason)
		return rej
	}
	m.waiting++
	c.perTenant[name]++
	if mt := c.o.Metrics; mt != nil {
		mt.Waiting.WithLabelValues(m.name).Inc()
	}
	return nil
}

func (c *Cold) leave(m *coldModel, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.waiting--
	if c.perTenant[name]--; c.perTenant[name] <= 0 {
		delete(c.perTenant, name)
	}
	if mt := c.o.Metrics; mt != nil {
		mt.Waiting.WithLabelValues(m.name).Dec()
	}
}

// wait polls for a ready replica, starting the model when no start is in
// flight and the last failed more than Retry ago, succeeded more than
// startRecheck ago, or never ran.
func (c *Cold) wait(ctx context.Context, m *coldModel) (string, error) {
	deadline := time.NewTimer(c.o.Timeout)
	defer deadline.Stop()
	poll := time.NewTicker(c.o.Poll)
	defer poll.Stop()
	for {
		if c.o.Ready(m.name) {
			return "ready", nil
		}
		c.maybeStart(ctx, m)
		if c.o.Ready(m.name) {
			return "ready", nil
		}
		select {
		case <-ctx.Done():
			return "canceled", fmt.Errorf("left while %s started: %w", m.name, context.Cause(ctx))
		case <-deadline.C:
			c.count(m.name, "timeout")
			return "timeout", &ColdRejected{Reason: "timeout", RetryAfter: c.o.Retry,
				Detail: fmt.Sprintf("%s is starting and no replica passed its check within %s", m.name, c.o.Timeout)}
		case <-poll.C:
		}
	}
}

// maybeStart calls Start on the caller's goroutine when it is due, and
// tells Stage. The call outlives a client that leaves: its count change
// is for the requests after it too.
func (c *Cold) maybeStart(ctx context.Context, m *coldModel) {
	now := c.o.Now()
	c.mu.Lock()
	again := startRecheck
	if m.failed {
		again = c.o.Retry
	}
	due := !m.starting && (m.tried.IsZero() || now.Sub(m.tried) >= again)
	if due {
		m.starting, m.tried = true, now
	}
	c.mu.Unlock()
	if !due {
		return
	}
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startCallTimeout)
	changed, err := c.o.Starter.Start(callCtx, m.name)
	cancel()
	c.mu.Lock()
	m.starting, m.failed = false, err != nil
	if err == nil {
		m.asked = true
	}
	c.mu.Unlock()
	c.scaled(m.name, "up", changed, err)
	c.stage(ctx, Stage{Model: m.name, Name: "scale", Start: now, Took: c.o.Now().Sub(now), Changed: changed, Err: err})
}

func (c *Cold) stage(ctx context.Context, s Stage) {
	if c.o.Stage != nil {
		c.o.Stage(ctx, s)
	}
}

func (c *Cold) count(model, reason string) {
	if mt := c.o.Metrics; mt != nil {
		mt.Rejected.WithLabelValues(model, reason).Inc()
	}
}

func (c *Cold) scaled(model, direction string, changed bool, err error) {
	if mt := c.o.Metrics; mt != nil {
		result := "unchanged"
		switch {
		case err != nil:
			result = "error"
		case changed:
			result = "changed"
		}
		mt.Scale.WithLabelValues(model, direction, result).Inc()
	}
}
