package statuspage

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// ReplicaState is one replica as the router sees it: the fields of
// /admin/replicas plus the driver session that holds its KV state and the
// hit rates.
type ReplicaState struct {
	ID, Model, Address, Source string
	Mode                       string // exact, approx
	Role                       string // agg, prefill or decode (disaggregated serving)
	KVEvents                   bool   // the replica advertises KV events
	Healthy                    bool   // its breaker is closed
	Draining                   bool
	Health                     string // the discovery check's state
	// Driver is the driver session that holds its KV state ("" when none).
	Driver string
	// ApproxReason says why it is approx though a driver holds its state
	// (the index refused it, or its block size is not its model's key
	// size); "" otherwise.
	ApproxReason string
	// InFlight and PeerInFlight: requests in flight to it, this router's
	// own and those its peers report; Waiting, Running and KVUsage the
	// engine's figures, last scraped.
	InFlight, PeerInFlight int
	Waiting, Running       float64
	KVUsage                float64
	GPUBlocks, CPUBlocks   int // blocks the index holds for it
	// Engine* are the engine's prefix-cache counters (tokens queried and
	// hit) since this router first scraped it; EngineKnown is false when
	// the engine exports none.
	EngineQueries, EngineHits float64
	EngineKnown               bool
	// Predicted* are what this router predicted for the requests it sent
	// there: prompt tokens and of those cached.
	PredictedPrompt, PredictedCached uint64
}

// ModelState is a model's index.
type ModelState struct {
	Name string
	// IndexKeys are distinct block keys in its index, IndexMax their cap
	// (0: unknown), IndexRejected the block stores dropped at the cap.
	IndexKeys, IndexMax int
	IndexRejected       uint64
	// Scale is, for a model the router scales from zero, cold (no
	// replica asked for), starting (asked for, none passing its check) or
	// warm, with ColdWaiting the requests waiting for it to start; "" for
	// every other model.
	Scale       string
	ColdWaiting int
}

// Fleet is the replicas and models the router routes to.
type Fleet interface {
	Replicas() []ReplicaState
	Models() []ModelState
}

// PeerState is one other router whose load reports this router holds.
type PeerState struct {
	ID       string
	LastSeen time.Time
	// Replicas and InFlight are from its last report: the replicas it
	// named and its requests in flight to them.
	Replicas, InFlight int
}

// DriverSession is one driver's KV session with this router.
type DriverSession struct {
	Driver string
	// Live: the receiver holds the session (epoch and sequence number);
	// false after it was dropped, until the driver's next snapshot.
	Live       bool
	Epoch, Seq uint64
	LastSeen   time.Time
	// Replicas it holds live KV state for.
	Replicas []string
}

// Overhead is one stage's routing time, from the
// llmgw_routing_overhead_seconds histogram.
type Overhead struct {
	Stage         string
	Count         uint64
	P50, P90, P99 time.Duration
}

// RouterState is this router.
type RouterState struct {
	ID string // its peer instance id ("" without peers)
	// IngestOn is false without kv_token: every replica is approx.
	IngestOn bool
	// PeersOn is false when load sharing is off (no peer_load_interval or
	// no peer_token).
	PeersOn    bool
	Peers      []PeerState
	Drivers    []DriverSession
	QueueDepth int // requests waiting in the admission queue
	MaxQueue   int
	Overhead   []Overhead
}

// Router is this router's own state.
type Router interface {
	Router() RouterState
}

// Decision is one routed request and why it went where it did, as the
// explain API shows it: the chosen replica's scores and the runner-up.
type Decision struct {
	At             time.Time
	Model, Replica string
	Mode           string
	PromptTokens   int
	CachedTokens   int // predicted cached on the chosen replica
	Total          float64
	Scores         []Score // the chosen replica's, unweighted
	RunnerUp       string  // "" when it was the only candidate
	RunnerUpTotal  float64
	Candidates     int
	Overhead       time.Duration
	// Prefill is the prefill replica of a disaggregated request ("" for
	// others), PrefillCachedTokens its predicted cached tokens.
	Prefill             string
	PrefillCachedTokens int
	// ContinuedFrom is the failed replica whose stream this decision
	// continued ("" for a client's request).
	ContinuedFrom string
}

// Score is one scorer's unweighted score.
type Score struct {
	Name  string
	Value float64
}

// Decisions is the log of recent routing decisions, newest first.
type Decisions interface {
	Recent() []Decision
}

// Page is the view model the template renders: every figure already
// formatted or reduced to what the page shows.
type Page struct {
	Generated time.Time
	Refresh   int // seconds; 0: no auto-refresh
	Router    RouterState
	Models    []ModelView
	Decisions []DecisionView
}

// ModelView is one model's section.
type ModelView struct {
	ModelState
	Replicas []ReplicaView
	// PeerInFlight sums its replicas' requests the peers report.
	PeerInFlight int
}

// ReplicaView is one row of a model's replica table.
type ReplicaView struct {
	ReplicaState
	ModeReason string
	// HealthText sums breaker and drain state in words.
	HealthText string
	// EngineHitRate and PredictedHitRate are percentages, or "n/a".
	EngineHitRate, PredictedHitRate string
}

// DecisionView is one row of the decision log.
type DecisionView struct {
	Decision
	Reason string
}

// Build assembles the page from the router's state. refresh is the
// auto-refresh period in seconds (0: none).
func Build(now time.Time, refresh int, f Fleet, r Router, d Decisions) Page {
	p := Page{Generated: now, Refresh: refresh, Router: r.Router()}
	rs := p.Router
	byModel := map[string]*ModelView{}
	for _, m := range f.Models() {
		byModel[m.Name] = &ModelView{ModelState: m}
	}
	for _, rep := range f.Replicas() {
		mv := byModel[rep.Model]
		if mv == nil { // a replica of a model with no index yet
			mv = &ModelView{ModelState: ModelState{Name: rep.Model}}
			byModel[rep.Model] = mv
		}
		mv.Replicas = append(mv.Replicas, ReplicaView{
			ReplicaState: rep, ModeReason: modeReason(rep, rs.IngestOn), HealthText: healthText(rep),
			EngineHitRate:    rate(rep.EngineHits, rep.EngineQueries, rep.EngineKnown),
			PredictedHitRate: rate(float64(rep.PredictedCached), float64(rep.PredictedPrompt), true),
		})
		mv.PeerInFlight += rep.PeerInFlight
	}
	for _, mv := range byModel {
		slices.SortFunc(mv.Replicas, func(a, b ReplicaView) int { return cmp.Compare(a.ID, b.ID) })
		p.Models = append(p.Models, *mv)
	}
	slices.SortFunc(p.Models, func(a, b ModelView) int { return cmp.Compare(a.Name, b.Name) })
	for _, dec := range d.Recent() {
		p.Decisions = append(p.Decisions, DecisionView{Decision: dec, Reason: reason(dec)})
	}
	return p
}

// modeReason says why a replica routes in its mode, naming what to check.
func modeReason(r ReplicaState, ingestOn bool) string {
	switch {
	case r.Mode == "exact" && r.Driver != "":
		return "driver " + r.Driver + " holds its KV state"
	case r.Mode == "exact":
		return "a driver session holds its KV state"
	case r.ApproxReason != "":
		return r.ApproxReason
	case !ingestOn:
		return "KV ingest is off on this router (no kv_token)"
	case !r.KVEvents:
		return "it does not advertise KV events (kv_events=false): routed on this router's history"
	default:
		return "it advertises KV events but no driver session holds its state (llmgw_replica_kv_events_missing)"
	}
}

func healthText(r ReplicaState) string {
	switch {
	case !r.Healthy:
		return "breaker open"
	case r.Draining && r.Health != "":
		return "draining (" + r.Health + ")"
	case r.Draining:
		return "draining"
	default:
		return "healthy"
	}
}

// rate is part/whole as a percentage, "n/a" when unknown or nothing was
// counted yet.
func rate(part, whole float64, known bool) string {
	if !known || whole <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*part/whole)
}

// reason is a decision in a sentence: what it scored and what it beat.
func reason(d Decision) string {
	s := fmt.Sprintf("%s mode, %d of %d prompt tokens predicted cached, total %.3f", d.Mode, d.CachedTokens, d.PromptTokens, d.Total)
	for _, sc := range d.Scores {
		s += fmt.Sprintf("; %s %.3f", sc.Name, sc.Value)
	}
	if d.RunnerUp != "" {
		s += fmt.Sprintf("; beat %s (%.3f) of %d candidates", d.RunnerUp, d.RunnerUpTotal, d.Candidates)
	} else {
		s += "; the only candidate"
	}
	if d.Prefill != "" {
		s += fmt.Sprintf("; prefilled on %s, %d of %d prompt tokens predicted cached there", d.Prefill, d.PrefillCachedTokens, d.PromptTokens)
	}
	if d.ContinuedFrom != "" {
		s += fmt.Sprintf("; continues a stream whose replica %s failed mid-answer", d.ContinuedFrom)
	}
	return s
}
