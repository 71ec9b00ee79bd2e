package server

import (
	"net/http"
	"sort"
	"sync"

	"github.com/llmgw/llmgw/router/enginemetrics"
	"github.com/llmgw/llmgw/router/statuspage"
)

// StatusPath is where the admin listener serves the status page.
const StatusPath = "/admin/status"

// adminHandler is the admin listener's handler, before admin_token: the
// gateway's admin API, and the status page at StatusPath.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(StatusPath, statuspage.Handler(statusFleet{s}, statusRouter{s}, statusDecisions{s}))
	mux.Handle("/", s.gw.AdminHandler())
	return mux
}

// engineHits keeps each replica's prefix-cache counters as first scraped,
// so the page shows the engine's hit rate over the same span as the
// router's prediction: since this router began watching it.
type engineHits struct {
	mu    sync.Mutex
	first map[string][2]float64 // queries, hits at the first scrape
	last  map[string][2]float64
}

func (e *engineHits) observe(replica string, smp enginemetrics.Sample) {
	if !smp.PrefixKnown {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first == nil {
		e.first, e.last = map[string][2]float64{}, map[string][2]float64{}
	}
	cur := [2]float64{smp.PrefixQueries, smp.PrefixHits}
	if f, ok := e.first[replica]; !ok || cur[0] < f[0] || cur[1] < f[1] { // new, or the engine restarted
		e.first[replica] = cur
	}
	e.last[replica] = cur
}

// since returns the tokens queried and hit since the first scrape.
func (e *engineHits) since(replica string) (queries, hits float64, known bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.last[replica]
	if !ok {
		return 0, 0, false
	}
	f := e.first[replica]
	return l[0] - f[0], l[1] - f[1], true
}

// forget drops the counters of replicas no longer in the set.
func (e *engineHits) forget(keep map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id := range e.last {
		if !keep[id] {
			delete(e.first, id)
			delete(e.last, id)
		}
	}
}

// statusFleet reads the replicas as /admin/replicas and /metrics do.
type statusFleet struct{ s *Server }

func (f statusFleet) Replicas() []statuspage.ReplicaState {
	s := f.s
	var owners map[string]string
	if s.receiver != nil {
		owners = map[string]string{}
		for d, reps := range s.sink.Drivers() {
			for _, r := range reps {
				owners[r] = d
			}
		}
	}
	all := s.set.All()
	keep := make(map[string]bool, len(all))
	out := make([]statuspage.ReplicaState, 0, len(all))
	for _, r := range all {
		keep[r.ID] = true
		l, peer := s.tracker.Load(r.ID), s.tracker.PeerLoad(r.ID)
		gpu, cpu := s.models.For(r.Model).ReplicaBlocks(r.ID)
		q, h, known := s.hits.since(r.ID)
		pred := s.planner.PredictedFor(r.ID)
		out = append(out, statuspage.ReplicaState{
			ID: r.ID, Model: r.Model, Address: r.Address, Source: r.Source, Mode: string(s.set.Mode(r.ID)), ApproxReason: s.set.ModeReason(r.ID), Role: r.Role.String(),
			KVEvents: r.KVEvents, Healthy: s.set.Healthy(r.ID), Draining: r.Draining, Health: r.Health, Driver: owners[r.ID],
			InFlight: l.InFlight - peer.InFlight, PeerInFlight: peer.InFlight, Waiting: l.Waiting, Running: l.Running, KVUsage: l.KVUsage,
			GPUBlocks: gpu, CPUBlocks: cpu, EngineQueries: q, EngineHits: h, EngineKnown: known,
			PredictedPrompt: pred.PromptTokens, PredictedCached: pred.CachedTokens,
		})
	}
	s.hits.forget(keep)
	return out
}

func (f statusFleet) Models() []statuspage.ModelState {
	s := f.s
	limits := s.capacity.Limits()
	var out []statuspage.ModelState
	listed := map[string]bool{}
	for _, m := range s.set.Models() {
		st := s.models.For(m).Stats()
		out = append(out, statuspage.ModelState{Name: m, IndexKeys: st.Keys, IndexMax: limits[m], IndexRejected: st.Rejected})
		listed[m] = true
	}
	if s.cold == nil {
		return out
	}
	for _, m := range s.cold.Models() { // those at zero have no replica to list them
		if !listed[m] {
			out = append(out, statuspage.ModelState{Name: m})
		}
	}
	for i := range out {
		out[i].Scale, out[i].ColdWaiting = s.cold.State(out[i].Name), s.cold.Waiting(out[i].Name)
	}
	return out
}

// statusRouter reads the router's own state: peers, driver sessions, the
// admission queue and the overhead histogram.
type statusRouter struct{ s *Server }

func (r statusRouter) Router() statuspage.RouterState {
	s := r.s
	rs := statuspage.RouterState{IngestOn: s.receiver != nil, PeersOn: s.peerTable != nil}
	rs.QueueDepth, rs.MaxQueue = s.planner.QueueDepth()
	if s.peerTable != nil {
		rs.ID = s.peerTable.Self()
		for _, p := range s.peerTable.List() {
			rs.Peers = append(rs.Peers, statuspage.PeerState{ID: p.ID, LastSeen: p.LastSeen, Replicas: p.Replicas, InFlight: p.InFlight})
		}
	}
	if s.receiver != nil {
		held := s.sink.Drivers()
		for _, sess := range s.receiver.Sessions() {
			rs.Drivers = append(rs.Drivers, statuspage.DriverSession{
				Driver: sess.Driver, Live: true, Epoch: sess.Epoch, Seq: sess.Seq, LastSeen: sess.LastSeen, Replicas: held[sess.Driver],
			})
			delete(held, sess.Driver)
		}
		for d, reps := range held { // state kept, session dropped: a snapshot is due
			rs.Drivers = append(rs.Drivers, statuspage.DriverSession{Driver: d, Replicas: reps})
		}
		sort.Slice(rs.Drivers, func(i, j int) bool { return rs.Drivers[i].Driver < rs.Drivers[j].Driver })
	}
	rs.Overhead = r.overhead()
	return rs
}

// overhead reads llmgw_routing_overhead_seconds from the registry /metrics
// serves, one row per stage.
func (r statusRouter) overhead() []statuspage.Overhead {
	mfs, err := r.s.metrics.Registry.Gather()
	if err != nil {
		r.s.log.Warn("status page: gather metrics", "error", err)
	}
	var out []statuspage.Overhead
	for _, mf := range mfs {
		if mf.GetName() != "llmgw_routing_overhead_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			o := statuspage.Overhead{Count: h.GetSampleCount()}
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "stage" {
					o.Stage = lp.GetValue()
				}
			}
			var bs []statuspage.Bucket
			for _, b := range h.GetBucket() {
				bs = append(bs, statuspage.Bucket{UpperBound: b.GetUpperBound(), Count: b.GetCumulativeCount()})
			}
			o.P50 = statuspage.Quantile(0.5, bs, o.Count)
			o.P90 = statuspage.Quantile(0.9, bs, o.Count)
			o.P99 = statuspage.Quantile(0.99, bs, o.Count)
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return stageRank(out[i].Stage) < stageRank(out[j].Stage) })
	return out
}

// stageRank orders the stages as a request passes them, total last.
func stageRank(stage string) int {
	for i, s := range []string{"render", "tokenize", "hash", "schedule", "total"} {
		if s == stage {
			return i
		}
	}
	return -1 // a stage added later: first, in name order
}

// statusDecisions is the planner's decision log.
type statusDecisions struct{ s *Server }

func (d statusDecisions) Recent() []statuspage.Decision {
	var out []statuspage.Decision
	for _, g := range d.s.planner.RecentDecisions() {
		sd := statuspage.Decision{
			At: g.At, Model: g.Model, Replica: g.Replica, Mode: string(g.Mode), PromptTokens: g.PromptTokens,
			CachedTokens: g.CachedTokens, Total: g.Total, RunnerUp: g.RunnerUp, RunnerUpTotal: g.RunnerUpTotal,
			Candidates: g.Candidates, Overhead: g.Overhead, Prefill: g.Prefill, PrefillCachedTokens: g.PrefillCachedTokens,
			ContinuedFrom: g.ContinuedFrom,
		}
		for i, v := range g.Scores {
			if i < len(g.Scorers) {
				sd.Scores = append(sd.Scores, statuspage.Score{Name: g.Scorers[i], Value: v})
			}
		}
		out = append(out, sd)
	}
	return out
}
