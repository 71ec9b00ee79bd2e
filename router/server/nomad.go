package server

import (
	"context"
	"fmt"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/router/replicas"
)

// routerWatch is a live list of the registered routers: a consul or a
// nomad watcher.
type routerWatch interface {
	Current() ([]consul.Router, bool)
	Close()
}

// listedRouters boxes a routerWatch for an atomic.Pointer: the collector
// may read it while Start is still setting it.
type listedRouters struct{ routerWatch }

func (s *Server) nomadConfig() nomad.Config {
	n := s.cfg.Nomad
	return nomad.Config{Address: n.Address, Token: n.Token, Namespace: n.Namespace, Region: n.Region}
}

// startNomadReplicas watches the configured Nomad services for replicas
// (discovery = "nomad"), as startReplicas does Consul's.
func (s *Server) startNomadReplicas(ctx context.Context) ([]replicas.NamedSource, error) {
	client, err := nomad.NewClient(s.nomadConfig())
	if err != nil {
		return nil, err
	}
	var sources []replicas.NamedSource
	var synced []func() bool
	for _, svc := range s.cfg.Nomad.Services {
		w, err := nomad.WatchReplicas(ctx, client, svc, nomad.WatchOptions{Logger: s.log.Named("nomad")})
		if err != nil {
			return nil, fmt.Errorf("watch nomad service %s: %w", svc, err)
		}
		s.closers = append(s.closers, w.Close)
		synced = append(synced, func() bool { return w.Status().Synced })
		sources = append(sources, replicas.NamedSource{Service: svc, Source: w})
	}
	s.synced = func() bool {
		for _, ok := range synced {
			if !ok() {
				return false
			}
		}
		return true
	}
	return sources, nil
}

// watchRouters follows the passing llmgw-router instances in the
// configured discovery, for peer load sharing.
func (s *Server) watchRouters(ctx context.Context) (routerWatch, error) {
	if s.cfg.UsesNomad() {
		client, err := nomad.NewClient(s.nomadConfig())
		if err != nil {
			return nil, err
		}
		w, err := nomad.WatchRouters(ctx, client, nomad.WatchOptions{Logger: s.log.Named("nomad")})
		if err != nil {
			return nil, fmt.Errorf("watch %s in nomad: %w", consul.RouterService, err)
		}
		return w, nil
	}
	client, err := s.consulClient()
	if err != nil {
		return nil, err
	}
	w, err := consul.WatchRouters(ctx, client, consul.WatchOptions{Logger: s.log.Named("consul")})
	if err != nil {
		return nil, fmt.Errorf("watch %s in consul: %w", consul.RouterService, err)
	}
	return w, nil
}
