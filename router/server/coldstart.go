package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"

	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/tracing"
)

// WithColdStage has f told of each stage of a request held while its
// model starts from zero (the scale-up call, the wait) and of each
// scale-down, after the router logs it: the hook through which tracing
// records them. f runs on the request's goroutine with its context.
func WithColdStage(f func(ctx context.Context, s admission.Stage)) Option {
	return func(o *options) { o.coldStages = append(o.coldStages, f) }
}

// coldStarter starts and stops each model's Nomad task group.
type coldStarter struct {
	scaler *nomad.Scaler
	groups map[string]config.ScaleFromZero
}

func (c coldStarter) group(model string) nomad.Group {
	g := c.groups[model]
	return nomad.Group{Job: g.Job, Group: g.Group}
}

func (c coldStarter) Start(ctx context.Context, model string) (bool, error) {
	return c.scaler.Start(ctx, c.group(model), c.groups[model].Count, "llmgw-router: a request for "+model+" found no replica")
}

func (c coldStarter) Stop(ctx context.Context, model string) (bool, error) {
	idle := c.groups[model].IdleTimeout
	return c.scaler.Stop(ctx, c.group(model), fmt.Sprintf("llmgw-router: no request for %s in %s", model, idle), idle)
}

func (c coldStarter) Count(ctx context.Context, model string) (int, error) {
	return c.scaler.Count(ctx, c.group(model))
}

// startCold builds the hold for the models the nomad block scales from
// zero, and the loop that scales idle ones back; s.cold stays nil when
// there are none.
func (s *Server) startCold(ctx context.Context, opts []Option) error {
	list := s.cfg.Nomad.ScaleFromZero
	if len(list) == 0 {
		return nil
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	client, err := nomad.NewClient(s.nomadConfig())
	if err != nil {
		return err
	}
	starter := coldStarter{scaler: nomad.NewScaler(client), groups: map[string]config.ScaleFromZero{}}
	idle := map[string]time.Duration{}
	minIdle := time.Duration(0)
	for _, m := range list {
		starter.groups[m.Model], idle[m.Model] = m, m.IdleTimeout
		if m.IdleTimeout > 0 && (minIdle == 0 || m.IdleTimeout < minIdle) {
			minIdle = m.IdleTimeout
		}
	}
	metrics := admission.NewColdMetrics()
	for _, c := range metrics.Collectors() {
		if err := s.metrics.Registry.Register(c); err != nil {
			return fmt.Errorf("cold start metrics: %w", err)
		}
	}
	log := s.log.Named("coldstart")
	s.cold, err = admission.NewCold(admission.ColdOptions{
		Idle: idle, Timeout: s.cfg.Nomad.ColdStartTimeout, MaxWaiting: s.cfg.Nomad.MaxColdQueue,
		MaxPerTenant: s.cfg.MaxQueuePerTenant, Ready: s.modelReady, InFlight: s.modelInFlight,
		Starter: starter, Metrics: metrics,
		Stage: func(ctx context.Context, st admission.Stage) {
			logColdStage(log, ctx, st)
			traceColdStage(ctx, st)
			for _, f := range o.coldStages {
				f(ctx, st)
			}
		},
	})
	if err != nil {
		return err
	}
	if minIdle > 0 {
		s.goLoop(ctx, min(max(minIdle/4, 100*time.Millisecond), 30*time.Second), func() { s.cold.Reap(ctx) })
	}
	return nil
}

// modelReady reports whether a replica of model passes its check and
// takes requests: the set holds no critical replica; a draining one takes
// none.
func (s *Server) modelReady(model string) bool {
	for _, r := range s.set.ForModel(model) {
		if !r.Draining {
			return true
		}
	}
	return false
}

// modelInFlight reports whether this router or a peer has a request in
// flight to a replica of model.
func (s *Server) modelInFlight(model string) bool {
	for _, r := range s.set.ForModel(model) {
		if s.tracker.Load(r.ID).InFlight > 0 {
			return true
		}
	}
	return false
}

// logColdStage logs a stage of a cold start with the request's id.
func logColdStage(log hclog.Logger, ctx context.Context, st admission.Stage) {
	args := []any{"model", st.Model, "took", st.Took}
	if id := route.RequestID(ctx); id != "" {
		args = append(args, "request_id", id)
	}
	switch {
	case st.Err != nil:
		log.Warn("cold start: "+st.Name+" failed", append(args, "error", st.Err)...)
	case st.Name == "wait":
		log.Info("cold start: wait ended", append(args, "result", st.Result)...)
	default:
		log.Info("cold start: "+st.Name, append(args, "changed", st.Changed)...)
	}
}

// SpanColdPrefix names the spans of a held request's cold-start stages,
// children of its decision's span: llmgw.cold_start.scale (the scale-up
// call, on the request that made it) and llmgw.cold_start.wait (the whole
// hold). Reap's scale_down runs outside any request and is not traced.
const SpanColdPrefix = "llmgw.cold_start."

// traceColdStage records st as a span of the held request's trace.
func traceColdStage(ctx context.Context, st admission.Stage) {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.request.model", st.Model)}
	if st.Name == "wait" {
		attrs = append(attrs, attribute.String("llmgw.cold_start.result", st.Result))
	} else {
		attrs = append(attrs, attribute.Bool("llmgw.cold_start.changed", st.Changed))
	}
	tracing.Record(ctx, SpanColdPrefix+st.Name, st.Start, st.Start.Add(st.Took), st.Err, attrs...)
}
