package server

import (
	"context"
	"time"

	"github.com/llmgw/llmgw/router/tracing"
)

// flushTimeout bounds how long Close waits for the last spans to reach
// the collector: a collector that is down must not hold up a shutdown.
const flushTimeout = 5 * time.Second

// startTracing starts the span exporter when the config names an
// endpoint (s.tracer stays nil, and the gateway traces nothing, when it
// does not). Close flushes it after the API server has shut down.
func (s *Server) startTracing(ctx context.Context) error {
	t := s.cfg.Tracing
	if t.Endpoint == "" {
		return nil
	}
	log := s.log.Named("tracing")
	p, err := tracing.New(ctx, tracing.Options{Endpoint: t.Endpoint, SampleRatio: t.SampleRatio,
		OnError: func(err error) { log.Warn("spans not exported", "error", err) }})
	if err != nil {
		return err
	}
	s.tracer = p
	s.log.Info("tracing on", "endpoint", t.Endpoint, "sample_ratio", t.SampleRatio)
	return nil
}

// stopTracing sends the spans still batched, the last requests' among
// them, within flushTimeout.
func (s *Server) stopTracing() {
	if s.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := s.tracer.Shutdown(ctx); err != nil {
		s.log.Warn("tracing: spans lost at shutdown", "error", err)
	}
}
