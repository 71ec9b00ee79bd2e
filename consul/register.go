package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/consul/api"
)

// Service describes one registration with the local Consul agent.
type Service struct {
	Name    string
	ID      string
	Address string
	Port    int
	Tags    []string
	Meta    map[string]string
	// Check is the HTTP health check; Consul polls it and routes only to
	// instances whose check passes.
	Check HTTPCheck
}

// HTTPCheck is an HTTP health check run by the Consul agent.
type HTTPCheck struct {
	// URL is polled with GET; 2xx is passing, 429 warning, anything else critical.
	URL      string
	Interval time.Duration // default 10 s; Consul's minimum is 1 s
	Timeout  time.Duration // default 5 s
	// DeregisterAfter removes the service after its check has been critical
	// this long, so a crashed router does not linger in the catalog
	// (default 1 min; Consul's minimum is 1 min).
	DeregisterAfter time.Duration
	// TLSSkipVerify checks an https URL without verifying its certificate:
	// the check asks whether the process serves, not who it is.
	TLSSkipVerify bool
}

// RouterRegistration builds the registration of a router: service llmgw-router,
// an HTTP check on http://address:httpPort/health, and the KV-ingest port in
// service meta so drivers can find it.
func RouterRegistration(id, address string, httpPort, ingestPort int) Service {
	return Service{
		Name:    RouterService,
		ID:      id,
		Address: address,
		Port:    httpPort,
		Meta:    map[string]string{MetaIngestPort: strconv.Itoa(ingestPort)},
		Check: HTTPCheck{
			URL: (&url.URL{Scheme: "http", Host: net.JoinHostPort(address, strconv.Itoa(httpPort)), Path: "/health"}).String(),
		},
	}
}

func (s Service) validate() error {
	switch {
	case s.Name == "":
		return errors.New("service name is empty")
	case s.ID == "":
		return errors.New("service id is empty")
	case s.Port <= 0 || s.Port > 65535:
		return fmt.Errorf("port %d out of range", s.Port)
	case s.Check.URL == "":
		return errors.New("health check URL is empty")
	}
	u, err := url.Parse(s.Check.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("health check URL %q is not an absolute http(s) URL", s.Check.URL)
	}
	return nil
}

// agentAPI is the part of the Consul client registration needs.
type agentAPI interface {
	ServiceRegisterOpts(service *api.AgentServiceRegistration, opts api.ServiceRegisterOpts) error
	ServiceDeregisterOpts(serviceID string, q *api.QueryOptions) error
}

// Registration is a service registered with the local agent; Deregister
// removes it on shutdown.
type Registration struct {
	agent agentAPI
	id    string
}

// Register registers s with the client's agent, replacing any earlier
// registration with the same ID and its checks (so a restarted process
// registers idempotently). The check starts critical: clients are sent to the
// service only after the agent has seen /health answer.
func Register(ctx context.Context, client *api.Client, s Service) (*Registration, error) {
	if client == nil {
		return nil, errors.New("register with consul: nil client")
	}
	return register(ctx, client.Agent(), s)
}

func register(ctx context.Context, a agentAPI, s Service) (*Registration, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("register %s with consul: %w", s.ID, err)
	}
	c := s.Check
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.DeregisterAfter <= 0 {
		c.DeregisterAfter = time.Minute
	}
	reg := &api.AgentServiceRegistration{
		ID:      s.ID,
		Name:    s.Name,
		Address: s.Address,
		Port:    s.Port,
		Tags:    s.Tags,
		Meta:    s.Meta,
		Check: &api.AgentServiceCheck{
			CheckID:                        "service:" + s.ID,
			Name:                           s.Name + " HTTP health",
			HTTP:                           c.URL,
			Method:                         "GET",
			Interval:                       c.Interval.String(),
			Timeout:                        c.Timeout.String(),
			DeregisterCriticalServiceAfter: c.DeregisterAfter.String(),
			Status:                         api.HealthCritical,
			TLSSkipVerify:                  c.TLSSkipVerify,
		},
	}
	opts := api.ServiceRegisterOpts{ReplaceExistingChecks: true}.WithContext(ctx)
	if err := a.ServiceRegisterOpts(reg, opts); err != nil {
		return nil, fmt.Errorf("register %s with consul: %w", s.ID, err)
	}
	return &Registration{agent: a, id: s.ID}, nil
}

// ID is the registered service ID.
func (r *Registration) ID() string { return r.id }

// Deregister removes the service from the agent, so watchers drop it at once
// instead of waiting for its check to fail.
func (r *Registration) Deregister(ctx context.Context) error {
	if err := r.agent.ServiceDeregisterOpts(r.id, (&api.QueryOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("deregister %s from consul: %w", r.id, err)
	}
	return nil
}
