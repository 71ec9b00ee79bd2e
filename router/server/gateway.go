package server

import (
	"context"

	"github.com/llmgw/llmgw/router/gateway"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/scheduler"
)

// startGateway builds the request path: the prompt sources, the
// schedulers, the metrics, the planner and the gateway that serves with
// them. It runs after the replicas, the keys (keys, s.limiter) and the
// peer table are started, and reads only parts built before it.
func (s *Server) startGateway(ctx context.Context, keys gateway.Authenticator, opts []Option) error {
	sources, etok, err := s.promptSources(opts)
	if err != nil {
		return err
	}
	prompts, perrs := prompt.New(sources)
	for _, e := range perrs {
		s.log.Warn("tokenizer unavailable", "error", e)
	}
	s.groups = kvgroups.NewIndex(s.models, s.layouts)
	sched, err := buildScheduler(s.cfg.Scheduler, scheduler.Deps{Index: s.groups}, opts)
	if err != nil {
		return err
	}
	pdThreshold, prefillSched, err := pdDeps(s.cfg.PD, scheduler.Deps{Index: s.groups}, opts)
	if err != nil {
		return err
	}
	s.metrics = gateway.NewMetrics(&collector{core: &s.core, peerTable: s.peerTable, routersListed: &s.routersListed}, etok)
	s.metrics.Registry.MustRegister(conversationMetrics(s.conv.Local)...)
	if err := s.startCold(ctx, opts); err != nil {
		return err
	}
	var cold route.ColdStart
	if s.cold != nil {
		cold = s.cold
	}
	planner, err := route.New(route.Deps{
		Replicas: s.set, Scheduler: sched, PrefillScheduler: prefillSched, Tracker: s.tracker, Prompts: prompts,
		Limits: s.limiter, Registry: s.metrics.Registry, Logger: s.log.Named("route"),
		BlocksOf: func(model, id string) (int, int) { return s.models.For(model).ReplicaBlocks(id) },
		KVGroups: s.groups.ExplainGroups, EngineHits: s.hits.since, Cold: cold,
		Options: route.Options{
			Attempts: s.cfg.Attempts, PD: pdThreshold,
			QueueTimeout: s.cfg.QueueTimeout, MaxQueue: s.cfg.MaxQueue, MaxQueuePerTenant: s.cfg.MaxQueuePerTenant,
			TTFTTarget: s.cfg.Scaling.TTFTTarget,
		},
	})
	if err != nil {
		return err
	}
	deps := gateway.Deps{
		Planner: planner, Metrics: s.metrics, Auth: keys, EngineKey: s.cfg.EngineKey,
		Ready: s.synced, Conversations: s.conv,
		Logger: s.log.Named("gateway"),
		Options: gateway.Options{
			SessionHeader:      sessionHeader(s.cfg.Scheduler),
			MaxBodyBytes:       s.cfg.MaxBodyBytes,
			UpstreamTimeout:    s.cfg.UpstreamTimeout,
			ExposeRouteHeaders: s.cfg.HTTP.ExposeRouteHeaders,
			Migration:          gateway.Migration(s.cfg.Migration),
			DisableRankPinning: !s.cfg.PinDataParallelRank,
		},
	}
	if s.tracer != nil { // a nil *Provider in the interface would not be nil
		deps.Tracer = s.tracer.TracerProvider()
	}
	gw, err := gateway.New(deps)
	if err != nil {
		return err
	}
	// The autoscaling signal reads the planner's queue (scaling.go).
	sc := &scalingCollector{set: s.set, tracker: s.tracker, queue: planner, policy: s.cfg.Scaling.Policy()}
	if s.cold != nil { // a nil *Cold in the interface would not be nil
		sc.cold = s.cold
	}
	s.metrics.Registry.MustRegister(sc)
	s.planner, s.gw = planner, gw
	return nil
}
