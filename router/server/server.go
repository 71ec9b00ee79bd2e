package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/enginemetrics"
	"github.com/llmgw/llmgw/router/gateway"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/peers"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/respstore"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tracing"
)

// Server is a running router.
type Server struct {
	cfg config.Config
	log hclog.Logger

	core                    // the index, the KV ingest and the replica set
	groups  *kvgroups.Index // the prefix index with the engine's hit rule
	metrics *gateway.Metrics
	limiter *ratelimit.Limiter // tenants' limits; nil without API keys
	hits    engineHits         // engines' prefix-cache counters, for the status page

	gw              *gateway.Gateway
	tracer          *tracing.Provider // nil: tracing off (tracing.go)
	planner         *route.Planner
	api, ingest     *http.Server
	apiLn, ingestLn net.Listener
	admin           *http.Server // AdminHandler, on its own listener
	adminLn         net.Listener
	watchers        []*consul.Watcher[consul.Replica]
	scraper         *enginemetrics.Scraper
	registration    *consul.Registration
	peerTable       *peers.Table
	peerPub         *peers.Publisher
	routerWatch     routerWatch
	conv            *respstore.Fleet
	routersListed   atomic.Pointer[listedRouters] // routerWatch, for scrapes during Start
	closers         []func()                      // nomad watchers (nomad.go)
	cold            *admission.Cold               // nil unless models scale from zero (coldstart.go)
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	synced          func() bool
	closeOnce       sync.Once
}

// Run starts the router and serves until ctx ends, then shuts down.
func Run(ctx context.Context, cfg config.Config, log hclog.Logger, opts ...Option) error {
	s, err := Start(ctx, cfg, log, opts...)
	if err != nil {
		return err
	}
	<-ctx.Done()
	s.Close()
	return nil
}

// Start opens the listeners and starts every part; Close stops them. On an
// error, whatever was started is stopped again. opts extend the router
// (WithPlugins); cmd/llmgw-router passes the peers' policies
// (router/peerpolicy).
func Start(ctx context.Context, cfg config.Config, log hclog.Logger, opts ...Option) (_ *Server, err error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{cfg: cfg, log: log, cancel: cancel, synced: func() bool { return true }}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	if s.core, err = buildCore(coreParts(cfg, log)); err != nil {
		return nil, err
	}
	// Each step reads only what the steps before it built.
	if err := s.startReplicas(ctx); err != nil { // the readiness check reads what this sets up
		return nil, err
	}
	keys, err := s.startAuth(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.startPeerTable(ctx); err != nil { // shares the limiter's usage
		return nil, err
	}
	if err := s.startConversations(ctx); err != nil {
		return nil, err
	}
	if err := s.startTracing(ctx); err != nil {
		return nil, err
	}
	if err := s.startGateway(ctx, keys, opts); err != nil {
		return nil, err
	}
	if err := s.openListeners(); err != nil {
		return nil, err
	}
	s.serve(s.api, s.apiLn, "api")
	s.serve(s.admin, s.adminLn, "admin")
	s.serve(s.ingest, s.ingestLn, "ingest")
	if err := s.startWatching(ctx); err != nil {
		return nil, err
	}
	if err := s.announce(ctx); err != nil {
		return nil, err
	}
	log.Info("llmgw-router started", "api", s.Addr(), "admin", s.AdminAddr(), "ingest", s.IngestAddr())
	return s, nil
}

// startWatching starts what watches the fleet once the router serves: the
// engines' metrics scrape, the capacity check on what it brings, and the
// expiry of drivers gone silent.
func (s *Server) startWatching(ctx context.Context) (err error) {
	s.scraper, err = enginemetrics.Start(ctx, s.targets, enginemetrics.SinkFunc(s.scraped), enginemetrics.Options{
		Interval: s.cfg.ScrapeInterval, MaxRate: config.CapOf(s.cfg.Rates.ScrapeMaxRate), Logger: s.log.Named("scrape"),
	})
	if err != nil {
		return err
	}
	s.goLoop(ctx, s.cfg.ScrapeInterval, s.capacity.check)
	if s.receiver != nil {
		expiry := s.cfg.DriverExpiry
		s.goLoop(ctx, expiry/3, func() {
			for _, d := range s.receiver.Expire(time.Now().Add(-expiry)) {
				s.log.Warn("driver went silent; dropping its KV state", "driver", d)
			}
		})
	}
	return nil
}

// announce registers the router in Consul, when configured to, and
// starts sharing its tenants' use with the other routers (peers.go).
func (s *Server) announce(ctx context.Context) error {
	var svcID string
	if s.cfg.Consul.Register {
		var err error
		if svcID, err = s.register(ctx); err != nil {
			return err
		}
	}
	if s.cfg.Consul.Address != "" || s.cfg.UsesNomad() {
		return s.startPublisher(ctx, svcID)
	}
	return nil
}

func (s *Server) serve(srv *http.Server, ln net.Listener, name string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "listener", name, "error", err)
		}
	}()
}

func (s *Server) goLoop(ctx context.Context, every time.Duration, fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(max(every, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

func (s *Server) consulClient() (*api.Client, error) {
	cc := api.DefaultConfig()
	cc.Address = s.cfg.Consul.Address
	c, err := api.NewClient(cc)
	if err != nil {
		return nil, fmt.Errorf("consul client: %w", err)
	}
	return c, nil
}

func (s *Server) startReplicas(ctx context.Context) error {
	var static []replicas.Replica
	for _, r := range s.cfg.Replicas {
		static = append(static, replicas.Replica{ID: r.ID, Model: r.Model, Address: r.Address, BlockSize: r.BlockSize, KVEvents: r.KVEvents, Source: "static", Role: replicas.RoleOf(r.Role), Task: r.Task})
	}
	var sources []replicas.NamedSource
	if s.cfg.UsesNomad() {
		var err error
		if sources, err = s.startNomadReplicas(ctx); err != nil {
			return err
		}
	} else if s.cfg.Consul.Address != "" && len(s.cfg.Consul.Services) > 0 {
		client, err := s.consulClient()
		if err != nil {
			return err
		}
		for _, svc := range s.cfg.Consul.Services {
			w, err := consul.WatchReplicas(ctx, client, svc, consul.WatchOptions{Logger: s.log.Named("consul")})
			if err != nil {
				return fmt.Errorf("watch consul service %s: %w", svc, err)
			}
			s.watchers = append(s.watchers, w)
			sources = append(sources, replicas.NamedSource{Service: svc, Source: w})
		}
		s.synced = func() bool {
			for _, w := range s.watchers {
				if !w.Status().Synced {
					return false
				}
			}
			return true
		}
	}
	// The static replicas are in the set before Start returns, so a
	// request sent the moment it does is not told the model does not
	// exist; the watched services join as Follow hears of them.
	s.set.Replace(static)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		replicas.Follow(ctx, s.set, static, sources)
	}()
	return nil
}

// advertised is the address this router is reached at: the configured
// one, else its API listener's host (127.0.0.1 for an unspecified one).
func (s *Server) advertised() string {
	if s.cfg.AdvertiseAddress != "" {
		return s.cfg.AdvertiseAddress
	}
	host, _, _ := net.SplitHostPort(s.apiLn.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return host
}

// register registers the router in Consul and returns its service id.
func (s *Server) register(ctx context.Context) (string, error) {
	client, err := s.consulClient()
	if err != nil {
		return "", err
	}
	addr := s.advertised()
	id := s.cfg.Consul.ServiceID
	if id == "" {
		id = "llmgw-router-" + net.JoinHostPort(addr, strconv.Itoa(port(s.apiLn)))
	}
	svc := consul.RouterRegistration(id, addr, port(s.apiLn), port(s.ingestLn))
	svc.Meta[consul.MetaAdminPort] = strconv.Itoa(port(s.adminLn))
	if s.cfg.HTTP.APITLS.Enabled() {
		svc.Check.URL = "https" + strings.TrimPrefix(svc.Check.URL, "http")
		svc.Check.TLSSkipVerify = true
	}
	svc.Check.Interval = s.cfg.Consul.CheckInterval
	svc.Check.DeregisterAfter = time.Minute
	s.registration, err = consul.Register(ctx, client, svc)
	if err != nil {
		return "", fmt.Errorf("register in consul: %w", err)
	}
	return id, nil
}

func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// Addr is the API listener's address.
func (s *Server) Addr() string { return s.apiLn.Addr().String() }

// IngestAddr is the KV-ingest listener's address.
func (s *Server) IngestAddr() string { return s.ingestLn.Addr().String() }

// Replicas exposes the replica set (tests and the admin API read it).
func (s *Server) Replicas() *replicas.Set { return s.set }

// Close deregisters, stops the listeners (letting in-flight requests finish
// for a few seconds), then every goroutine, and waits for them.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		if s.registration != nil {
			if err := s.registration.Deregister(context.Background()); err != nil {
				s.log.Warn("deregister from consul", "error", err)
			}
		}
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range []*http.Server{s.api, s.admin, s.ingest} {
			if srv != nil && srv.Shutdown(shutdown) != nil {
				// Shutdown waits up to 5 s for a connection that has sent
				// nothing yet (a client transport's spare dial); past the
				// grace, close what is left rather than leave it open.
				_ = srv.Close()
			}
		}
		for _, ln := range []net.Listener{s.apiLn, s.adminLn, s.ingestLn} {
			if ln != nil {
				_ = ln.Close() // unserved listeners after a failed Start
			}
		}
		if s.gw != nil {
			s.gw.Close()
		}
		s.stopTracing() // after the API server: its last requests' spans are sent
		if s.peerPub != nil {
			s.peerPub.Close()
		}
		s.cancel()
		if s.scraper != nil {
			s.scraper.Close()
		}
		for _, w := range s.watchers {
			w.Close()
		}
		for _, c := range s.closers {
			c()
		}
		if s.routerWatch != nil {
			s.routerWatch.Close()
		}
		s.wg.Wait()
	})
}

// ingestHandler serves kvwire.Path with the Receiver, counting answers.
func (s *Server) ingestHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(kvwire.Path, func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		if s.receiver == nil {
			http.Error(rec, `{"error":"kv ingest is disabled on this router (no kv_token)"}`, http.StatusServiceUnavailable)
		} else {
			s.receiver.ServeHTTP(rec, r)
		}
		s.metrics.Ingest.WithLabelValues(strconv.Itoa(rec.code)).Inc()
	})
	if s.peerTable != nil {
		mux.Handle(peers.Path, s.peerTable)
		mux.Handle(respstore.PeerPath, s.conv.Handler())
	}
	return mux
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) targets() []enginemetrics.Target {
	all := s.set.All()
	out := make([]enginemetrics.Target, len(all))
	for i, r := range all {
		out[i] = enginemetrics.Target{ID: r.ID, URL: "http://" + r.Address + "/metrics", ModelsURL: "http://" + r.Address + "/v1/models", APIKey: s.cfg.EngineKey(r.Model)}
	}
	return out
}

func (s *Server) scraped(id string, smp enginemetrics.Sample) {
	s.tracker.SetScraped(id, smp.Waiting, smp.Running, smp.KVUsage)
	s.capacity.observe(id, smp.GPUBlocks, smp.CPUBlocks)
	s.hits.observe(id, smp)
	s.set.NoteScrapedBlockSize(id, smp.BlockSize)
	if smp.AdaptersKnown {
		s.set.SetAdapters(id, smp.Adapters)
	}
}

// sessionHeader finds the session scorer's header in the scheduler config.
func sessionHeader(c scheduler.Config) string {
	for _, sp := range c.Scorers {
		if sp.Type != "session" || len(sp.Params) == 0 {
			continue
		}
		var p struct {
			Header string `json:"header"`
		}
		if json.Unmarshal(sp.Params, &p) == nil && p.Header != "" {
			return p.Header
		}
	}
	return "X-Session-Id"
}
