package server

import (
	"context"

	"github.com/llmgw/llmgw/router/gateway"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/scheduler"
)

// startGateway builds the request path: the prompt sources, the
// schedulers, the metrics, the API keys and the gateway that routes with
// them.
func (s *Server) startGateway(ctx context.Context, opts []Option) error {
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
	s.metrics = gateway.NewMetrics(&collector{s: s}, etok)
	keys, err := s.startAuth(ctx)
	if err != nil {
		return err
	}
	gw, err := gateway.New(gateway.Deps{
		Auth: keys, Limits: s.limiter,
		Replicas: s.set, Scheduler: sched, Tracker: s.tracker, Prompts: prompts, Metrics: s.metrics,
		PD: pdThreshold, PrefillScheduler: prefillSched,
		BlocksOf:        func(model, id string) (int, int) { return s.models.For(model).ReplicaBlocks(id) },
		KVGroups:        s.groups.ExplainGroups,
		Ready:           func() bool { return s.synced() },
		SessionHeader:   sessionHeader(s.cfg.Scheduler),
		MaxBodyBytes:    s.cfg.MaxBodyBytes,
		Attempts:        s.cfg.Attempts,
		UpstreamTimeout: s.cfg.UpstreamTimeout,
		QueueTimeout:    s.cfg.QueueTimeout,
		MaxQueue:        s.cfg.MaxQueue,
		EngineKey:       s.cfg.EngineKey,
		Logger:          s.log.Named("gateway"),

		ExposeRouteHeaders: s.cfg.HTTP.ExposeRouteHeaders,
		MaxQueuePerTenant:  s.cfg.MaxQueuePerTenant,
		Migration:          gateway.Migration(s.cfg.Migration),
	})
	if err != nil {
		return err
	}
	s.gw = gw
	return nil
}
