package route

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/autoscale"
	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Deps are what the planner decides with. Replicas, Scheduler, Tracker,
// Prompts and Registry are required.
type Deps struct {
	Replicas  *replicas.Set
	Scheduler *scheduler.Scheduler
	// PrefillScheduler schedules the prefill step of a disaggregated
	// model (nil: Scheduler). See pd.go.
	PrefillScheduler *scheduler.Scheduler
	Tracker          *load.Tracker
	Prompts          *prompt.Prompts
	// Limits enforces tenants' limits; nil enforces none.
	Limits *ratelimit.Limiter
	// Registry takes the planner's Prometheus series (the gateway's
	// registry, so that one /metrics serves both).
	Registry prometheus.Registerer
	Logger   hclog.Logger

	// BlocksOf reports a replica's indexed blocks (GPU, CPU) for the admin
	// listing; nil reports none.
	BlocksOf func(model, replica string) (gpu, cpu int)
	// EngineHits reports a replica's prefix-cache counters (tokens
	// queried and hit) since this router first scraped it, for the admin
	// listing's reported hits; known is false when the engine exports
	// none. nil reports none.
	EngineHits func(replica string) (queries, hits float64, known bool)
	// KVGroups explains a hybrid replica's predicted hit group by group
	// for Explain (router/kvgroups.Index.ExplainGroups): a JSON value, nil
	// for a replica with one full-attention group.
	KVGroups func(model string, keys []uint64, maxBlocks int, replica string) any
	// Cold holds requests for models scaled to zero while they start
	// (admission.Cold); nil holds none.
	Cold ColdStart

	Options Options
}

// Options are the planner's settings, each with a default for its zero
// value.
type Options struct {
	// Attempts is how many replicas a request may be tried on before the
	// first byte reaches the client (default 1).
	Attempts int
	// PD decides when a decode replica prefills a prompt itself instead
	// of pulling it from a prefill replica (the zero value takes
	// disagg.DefaultThreshold).
	PD disagg.Threshold
	// QueueTimeout is how long a request waits while every replica is
	// over its busy threshold (0: answer 429 at once); MaxQueue bounds the
	// waiters (default 1024), MaxQueuePerTenant one tenant's (0:
	// MaxQueue). See router/admission.
	QueueTimeout      time.Duration
	MaxQueue          int
	MaxQueuePerTenant int
	// TTFTTarget is the time to first token the SLO metrics count
	// answers against (default 1 s, autoscale.DefaultPolicy).
	TTFTTarget time.Duration
}

// Planner makes every routing decision of one router. It is safe for
// concurrent use.
type Planner struct {
	d       Deps
	metrics *Metrics
	slo     *sloMetrics
	admit   *admission.Queue
	plans   sync.Pool // *Plan, reused so that scheduling allocates nothing
	// decisions is the decision log the status page shows.
	decisions decisionLog
	// ranks chooses data-parallel ranks for prompts no rank holds.
	ranks rankBalancer
}

// New builds a planner and registers its series in d.Registry.
func New(d Deps) (*Planner, error) {
	if d.Replicas == nil || d.Scheduler == nil || d.Tracker == nil || d.Prompts == nil || d.Registry == nil {
		return nil, errors.New("route: missing dependency (Replicas, Scheduler, Tracker, Prompts and Registry are required)")
	}
	if d.Logger == nil {
		d.Logger = hclog.NewNullLogger()
	}
	if d.PrefillScheduler == nil {
		d.PrefillScheduler = d.Scheduler
	}
	if d.BlocksOf == nil {
		d.BlocksOf = func(string, string) (int, int) { return 0, 0 }
	}
	o := &d.Options
	o.Attempts = max(o.Attempts, 1)
	if o.MaxQueue <= 0 {
		o.MaxQueue = 1024
	}
	if o.PD == (disagg.Threshold{}) {
		o.PD = disagg.DefaultThreshold()
	}
	m, err := newMetrics(d.Registry)
	if err != nil {
		return nil, err
	}
	if o.TTFTTarget <= 0 {
		o.TTFTTarget = autoscale.DefaultPolicy().TTFT
	}
	slo := newSLOMetrics(o.TTFTTarget)
	am := admission.NewMetrics()
	if err := registerAll(d.Registry, append(am.Collectors(), slo.total)...); err != nil {
		return nil, err
	}
	p := &Planner{d: d, metrics: m, slo: slo}
	p.admit = admission.New(admission.Options{Timeout: o.QueueTimeout, MaxWaiters: o.MaxQueue, MaxPerTenant: o.MaxQueuePerTenant, Metrics: am})
	return p, nil
}

// Metrics returns the planner's series.
func (pl *Planner) Metrics() *Metrics { return pl.metrics }

// Attempts is how many replicas a request is tried on at most.
func (pl *Planner) Attempts() int { return pl.d.Options.Attempts }

// QueueDepth is how many requests wait in the admission queue now, and
// the queue's bound.
func (pl *Planner) QueueDepth() (waiting, max int) {
	return pl.admit.Waiting(), pl.d.Options.MaxQueue
}

// Failed reports a failed attempt to the replica's circuit breaker
// (replicas.Set), so that the next decisions avoid it while it is open.
func (pl *Planner) Failed(replica string) { pl.d.Replicas.Failed(replica) }

// Succeeded reports an answered attempt to the replica's circuit breaker.
func (pl *Planner) Succeeded(replica string) { pl.d.Replicas.Succeeded(replica) }

// BeginPrefill counts a request sent to replica in its load until the
// replica answers (answered) and ends (end), and wakes the head of the
// model's admission queue at each change: a waiter can then see whether
// room is left. The answer counts against the TTFT target (slo.go).
func (pl *Planner) BeginPrefill(replica string, promptTokens, uncachedTokens int) (answered, end func()) {
	answered, ended := pl.d.Tracker.BeginPrefill(replica, promptTokens, uncachedTokens)
	pl.wake(replica)
	return pl.timed(replica, answered), func() {
		ended()
		pl.wake(replica)
	}
}

func (pl *Planner) wake(replica string) {
	if pl.admit.Waiting() == 0 {
		return
	}
	if model, ok := pl.d.Replicas.ModelOf(replica); ok {
		pl.admit.Wake(model)
	}
}

// ModelOf is the model replica serves, for the engine key of a prefill
// request.
func (pl *Planner) ModelOf(replica string) (string, bool) { return pl.d.Replicas.ModelOf(replica) }
