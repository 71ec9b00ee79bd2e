package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/plugin/pluginhost"
)

const (
	// blockSize is the shards' KV block size, as in jobs/demo-sim.nomad.hcl.
	blockSize = 16
	// checkInterval is how often Consul checks shards and routers: short,
	// so a dead process leaves DNS and the routers' replica sets quickly
	// (Consul's minimum is 1 s).
	checkInterval = time.Second
	// readyTimeout bounds each wait for the routers' view of the shards.
	readyTimeout = 60 * time.Second
)

// Options size and place a fleet. Zero values take the defaults noted.
type Options struct {
	BinDir    string   // llmgw-router, nomad-driver-vllm, vllm-sim, nomad-standin ("" = <repo>/bin)
	ConsulBin string   // "" = $LLMGW_CONSUL_BIN, else <BinDir>/consul
	Shards    int      // vllm-sim shards (default 4)
	Routers   int      // default 2
	Model     string   // default "sim-model"
	SimArgs   []string // extra vllm-sim flags (latency model, --num-gpu-blocks-override, ...)
	Scheduler string   // body of the router config's `scheduler { ... }` block; "" = router default
	WorkDir   string   // logs and state; "" = a temp dir removed by Close
	Log       hclog.Logger
	// FlushInterval is the driver's kv_flush_interval (0: the driver's
	// default, 250 ms).
	FlushInterval time.Duration
	// APIKey is the key the routers accept from clients (their api_keys);
	// "" = a new random one. Fleet.APIKey returns it.
	APIKey string
	// MaxModelLen is each shard's max_model_len, the longest prompt plus
	// answer its engine accepts (0: 8192, as jobs/demo-sim.nomad.hcl).
	MaxModelLen int
	// KeepAlive is the driver's kv_keep_alive (0: the driver's default,
	// 10 s).
	KeepAlive time.Duration
	// Discovery is DiscoveryConsul ("" too) or DiscoveryNomad: where
	// shards and routers are registered, and where routers and drivers
	// look for them. With DiscoveryNomad no Consul agent runs, and
	// ConsulBin is not needed.
	Discovery string
	// Roles are the shards' roles in disaggregated serving, by shard:
	// "prefill" or "decode" (the driver's task config role, with a NIXL
	// side-channel port, and the meta llmgw-role), "" or "agg" for an
	// aggregated shard; shards past its end are aggregated (roles.go).
	Roles []string
	// RouterHCL is top-level HCL appended to every router's config (a
	// fault run's `migration { enabled = false }`); "" for none.
	RouterHCL string
	// DataParallelSize is each shard's data_parallel_size (0 means 1):
	// the driver starts the engine with that many data-parallel ranks
	// behind one API server and takes a KV event stream from each, as
	// for vLLM with --data-parallel-size, so a replica's cache is split
	// over its ranks. Aggregated shards only (the driver refuses it with
	// a prefill or decode role).
	DataParallelSize int
}

// modelName keeps model names safe to write into HCL unquoted-free: no
// quotes, backslashes or template sequences.
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)

func (o Options) withDefaults() (Options, error) {
	if o.BinDir == "" {
		dir, err := repoBin()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	}
	if o.Discovery == "" {
		o.Discovery = DiscoveryConsul
	}
	if o.ConsulBin == "" {
		o.ConsulBin = os.Getenv("LLMGW_CONSUL_BIN")
	}
	if o.ConsulBin == "" {
		o.ConsulBin = filepath.Join(o.BinDir, "consul")
	}
	if o.MaxModelLen == 0 {
		o.MaxModelLen = 8192
	}
	if o.Shards == 0 {
		o.Shards = 4
	}
	if o.Routers == 0 {
		o.Routers = 2
	}
	if o.Model == "" {
		o.Model = "sim-model"
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.APIKey == "" {
		o.APIKey = "llmgw-" + randomHex(32) // as llmgw-router -new-key makes them
	}
	switch {
	case o.Shards < 1:
		return o, fmt.Errorf("fleet: Shards must be at least 1, got %d", o.Shards)
	case o.Routers < 1:
		return o, fmt.Errorf("fleet: Routers must be at least 1, got %d", o.Routers)
	case !modelName.MatchString(o.Model):
		return o, fmt.Errorf("fleet: Model %q: want letters, digits and ._:/- only", o.Model)
	case o.FlushInterval < 0:
		return o, fmt.Errorf("fleet: FlushInterval must not be negative, got %s", o.FlushInterval)
	case o.MaxModelLen < 0:
		return o, fmt.Errorf("fleet: MaxModelLen must not be negative, got %d", o.MaxModelLen)
	case o.DataParallelSize < 0:
		return o, fmt.Errorf("fleet: DataParallelSize must not be negative, got %d", o.DataParallelSize)
	case o.KeepAlive < 0:
		return o, fmt.Errorf("fleet: KeepAlive must not be negative, got %s", o.KeepAlive)
	case o.Discovery != DiscoveryConsul && o.Discovery != DiscoveryNomad:
		return o, fmt.Errorf("fleet: Discovery %q: want %s or %s", o.Discovery, DiscoveryConsul, DiscoveryNomad)
	}
	if err := o.validRoles(); err != nil {
		return o, err
	}
	bins := []string{filepath.Join(o.BinDir, "llmgw-router"), filepath.Join(o.BinDir, "nomad-driver-vllm"), filepath.Join(o.BinDir, "vllm-sim")}
	if o.Discovery == DiscoveryConsul {
		bins = append([]string{o.ConsulBin}, bins...)
	} else {
		bins = append(bins, filepath.Join(o.BinDir, "nomad-standin"))
	}
	for _, b := range bins {
		if _, err := os.Stat(b); err != nil {
			return o, fmt.Errorf("fleet: %w (`make build bin/consul` builds the binaries)", err)
		}
	}
	return o, nil
}

// repoBin finds <repo>/bin by walking up from the working directory to
// go.mod.
func repoBin() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("fleet: find the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("fleet: no go.mod above the working directory; set Options.BinDir")
		}
		dir = parent
	}
}

// Shard is a running vllm-sim shard: its llmgw replica id and API URL.
type Shard struct {
	ReplicaID, URL string
}

// Fleet is a running chain. Its methods are safe for concurrent use, but
// the ones that change the fleet (RestartRouters, KillRouter, StopShard,
// ResetCaches, KillDriver, the Restart* of restart.go, Close) run one at
// a time. The other faults (KillEngine, KillSupervisor, KillConsul,
// PauseConsul) only send a signal, and a fault run sends one at a time.
type Fleet struct {
	o         Options
	log       hclog.Logger
	dir       string
	removeDir bool
	token     string // the drivers' kv_token
	peerToken string // the routers' peer_token, distinct from token
	http      *http.Client

	cat    catalogue    // where shards and routers are registered
	consul *consulAgent // the Consul agent; nil with DiscoveryNomad
	driver *pluginhost.Host

	op sync.Mutex // serialises operations that change the fleet

	mu      sync.Mutex // guards the slices below
	routers []*router
	shards  []*shard
	gen     int // router generation, for unique names
	// routing is the routers' scheduler block and extra HCL
	// (startRouters'), for a router that replaces a killed one.
	routing routing

	closeOnce sync.Once
	closeErr  error
}

// Start brings up Consul, the driver with Shards vllm-sim tasks registered
// in Consul, and Routers routers, and returns once every router routes
// every shard in exact mode, with every cache empty. On error, or when ctx
// ends first, everything started is stopped again.
func Start(ctx context.Context, o Options) (_ *Fleet, err error) {
	if o, err = o.withDefaults(); err != nil {
		return nil, err
	}
	f := &Fleet{o: o, log: o.Log, dir: o.WorkDir, token: randomHex(16), peerToken: randomHex(16),
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	if f.dir == "" {
		if f.dir, err = os.MkdirTemp("", "llmgw-fleet-"); err != nil {
			return nil, fmt.Errorf("fleet work dir: %w", err)
		}
		f.removeDir = true
	} else if err = os.MkdirAll(f.dir, 0o755); err != nil {
		return nil, fmt.Errorf("fleet work dir: %w", err)
	}
	if err = f.startCatalogue(ctx); err != nil {
		return nil, err
	}
	if err = f.startDriver(ctx); err != nil {
		return nil, err
	}
	f.log.Info("starting shards", "count", o.Shards)
	if err = f.startShards(ctx, o.Shards); err != nil {
		return nil, err
	}
	f.log.Info("starting routers", "count", o.Routers)
	if err = f.startRouters(ctx, routing{scheduler: o.Scheduler}); err != nil {
		return nil, err
	}
	// The driver announces each shard, holding nothing, as soon as its
	// listener is up, so no request is needed for a shard to be exact.
	if err = f.waitExact(ctx); err != nil {
		return nil, err
	}
	f.log.Info("fleet ready", "routers", f.RouterURLs(), "discovery", o.Discovery)
	return f, nil
}

// startCatalogue starts the Consul agent, or the Nomad stand-in.
func (f *Fleet) startCatalogue(ctx context.Context) error {
	if f.o.Discovery == DiscoveryNomad {
		f.log.Info("starting the nomad services API stand-in")
		n, err := startNomad(ctx, f.o.BinDir, f.dir, f.http)
		if err != nil {
			return err
		}
		f.cat = n
		return nil
	}
	f.log.Info("starting consul", "dir", f.dir)
	a, err := startConsul(ctx, f.o.ConsulBin, f.dir)
	if err != nil {
		return err
	}
	f.consul, f.cat = a, consulCatalogue{a}
	return nil
}

// startRouters starts o.Routers routers of a new generation and waits
// until they route every shard in exact mode.
func (f *Fleet) startRouters(ctx context.Context, rt routing) error {
	f.mu.Lock()
	f.gen++
	gen := f.gen
	f.routing = rt
	f.mu.Unlock()
	for i := range f.o.Routers {
		r, err := f.startRouter(ctx, fmt.Sprintf("router-%d-%d", gen, i), rt)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.routers = append(f.routers, r)
		f.mu.Unlock()
	}
	return nil
}

// APIKey is the key clients send the routers (Authorization: Bearer).
func (f *Fleet) APIKey() string { return f.o.APIKey }

// RouterURLs are the live routers' API base URLs.
func (f *Fleet) RouterURLs() []string {
	var out []string
	for _, r := range f.liveRouters() {
		out = append(out, r.url)
	}
	return out
}

// ConsulHTTPAddr is the Consul agent's HTTP API, host:port; "" with
// DiscoveryNomad.
func (f *Fleet) ConsulHTTPAddr() string {
	if f.consul == nil {
		return ""
	}
	return f.consul.httpAddr
}

// ConsulDNSAddr is the Consul agent's DNS interface (UDP and TCP),
// host:port, where llmgw-router.service.consul resolves to live routers;
// "" with DiscoveryNomad.
func (f *Fleet) ConsulDNSAddr() string {
	if f.consul == nil {
		return ""
	}
	return f.consul.dnsAddr
}

// NomadAddr is the Nomad services API stand-in's base URL, as
// NOMAD_ADDR takes it; "" with DiscoveryConsul.
func (f *Fleet) NomadAddr() string {
	if n, ok := f.cat.(*nomadCatalogue); ok {
		return n.addr
	}
	return ""
}

// WorkDir holds every process's log (consul.log, router-*/router.log, each
// task's alloc/logs) while the fleet runs.
func (f *Fleet) WorkDir() string { return f.dir }

// Shards are the running shards, in start order.
func (f *Fleet) Shards() []Shard {
	var out []Shard
	for _, s := range f.runningShards() {
		out = append(out, Shard{ReplicaID: s.replica, URL: s.url})
	}
	return out
}

func (f *Fleet) liveRouters() []*router {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.routers), func(r *router) bool { return r.killed })
}

func (f *Fleet) runningShards() []*shard {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.shards), func(s *shard) bool { return s.stopped })
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
