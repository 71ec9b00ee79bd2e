package replicas

import (
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Replica is one model replica the router may send requests to.
type Replica struct {
	ID        string // "<alloc id>/<task>"
	Model     string
	Address   string // host:port of its OpenAI API
	BlockSize int
	// KVEvents says its driver forwards KV events (Consul meta), so exact
	// mode is expected once updates flow.
	KVEvents bool
	// KVCacheGroups declares the replica's KV-cache groups (Consul meta
	// llmgw-kv-cache-groups, router/kvgroups.ParseLayout); "" for none.
	KVCacheGroups string
	// DataParallelSize is the number of data-parallel ranks behind its
	// API server (Consul meta llmgw-data-parallel-size); 0 when unknown.
	DataParallelSize int
	// Source is "static" or the Consul service it came from.
	Source string
	// Health is the replica's Consul health (consul.Health*; "" for static
	// replicas, which count as passing).
	Health string
	// Draining is set while its Consul check warns or it is in maintenance:
	// it takes no new requests, finishes those in flight and keeps its KV
	// state, so it resumes with a warm cache.
	Draining bool
	// Role is its part in disaggregated serving (roles.go): aggregated,
	// prefill or decode.
	Role Role
	// Task is what its engine serves (consul.MetaTask): consul.TaskGenerate,
	// or a pooling task; "" counts as generate (static replicas).
	Task string
	// Root and MaxModelLen are what vLLM's /v1/models lists for its model
	// (consul.MetaRoot, consul.MetaMaxModelLen); "" and 0 when unknown.
	Root        string
	MaxModelLen int
}

// The tasks a replica serves, as vLLM names them (consul.MetaTask).
const (
	TaskGenerate = consul.TaskGenerate
	TaskEmbed    = consul.TaskEmbed
	TaskClassify = consul.TaskClassify
)

// TaskOf is what r serves, TaskGenerate for "".
func (r Replica) TaskOf() string {
	if r.Task == "" {
		return TaskGenerate
	}
	return r.Task
}

// KVState is the part of the KV ingest the set needs (router/ingest.Sink):
// it hears of every membership change, and says which replicas are exact.
// Membership flows one way: the set tells the ingest which replicas it
// lists and what they serve, and the ingest never asks.
type KVState interface {
	Synced(replica string) bool
	// SyncedGeneration changes whenever Synced's answers may have.
	SyncedGeneration() uint64
	// Joined is told of a replica that entered the set, or serves another
	// model now (after its Drop). It adopts state that arrived before the
	// replica did and returns the drivers that must be asked for a
	// snapshot instead.
	Joined(m ingest.Member) []string
	// Drop is told of a replica that left the set (or changed model).
	Drop(replica string)
}

// Drivers reaches the drivers that send KV state (internal/kvwire's
// Receiver): Forget ends a driver's session, so that its next update is
// answered "snapshot required" and it sends its full state.
type Drivers interface {
	Forget(driver string)
}

// Options tune a Set; zero values take the defaults.
type Options struct {
	// Logger receives membership changes.
	Logger hclog.Logger
	// Drivers, when set, is told of the drivers whose KV state for a
	// joining replica the ingest could not keep, so they are asked for a
	// snapshot.
	Drivers Drivers
	// BreakerFailures consecutive failures open a replica's breaker
	// (default 3); BreakerCooldown later it is tried again (default 10 s).
	BreakerFailures int
	BreakerCooldown time.Duration
	Now             func() time.Time
	// Holders, when set, lets AppendCandidatesFor narrow a large model's
	// candidates to the prompt's holders and Sample others; NarrowFrom is
	// the replica count from which it does (default DefaultNarrowFrom),
	// Sample the others drawn (default DefaultSample), HolderCap the most
	// holders listed (default DefaultHolderCap, see AppendCandidatesFor).
	Holders    HolderIndex
	NarrowFrom int
	Sample     int
	HolderCap  int
}

// Set is the current replica set. Safe for concurrent use.
type Set struct {
	kv      KVState
	tracker *load.Tracker
	opts    Options

	mu       sync.RWMutex
	byID     map[string]Replica
	byModel  map[string][]Replica
	breakers map[string]*breaker
	lora     loras

	templates templates // AppendCandidates' per-list candidates
	sizes     sizes     // block sizes (blocksize.go)
}

type breaker struct {
	failures  int
	openUntil time.Time
}

// New returns an empty set.
func New(kv KVState, tracker *load.Tracker, opts Options) *Set {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.BreakerFailures <= 0 {
		opts.BreakerFailures = 3
	}
	if opts.BreakerCooldown <= 0 {
		opts.BreakerCooldown = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NarrowFrom <= 0 {
		opts.NarrowFrom = DefaultNarrowFrom
	}
	if opts.Sample <= 0 {
		opts.Sample = DefaultSample
	}
	if opts.HolderCap <= 0 {
		opts.HolderCap = DefaultHolderCap
	}
	s := &Set{kv: kv, tracker: tracker, opts: opts, byID: map[string]Replica{}, byModel: map[string][]Replica{}, breakers: map[string]*breaker{}, lora: newLoras()}
	s.sizes.events, _ = kv.(engineSizes)
	s.sizes.metric = map[string]int{}
	return s
}

// Replace makes list the whole set. Replicas that left are dropped from the
// index, the load tracker and the breakers before Replace returns; replicas
// that joined take the KV state that arrived before them (KVState.Joined),
// or ask their drivers for a snapshot where it could not be kept. A
// replica id listed twice keeps its first entry.
func (s *Set) Replace(list []Replica) {
	next := make(map[string]Replica, len(list))
	for _, r := range list {
		if prev, dup := next[r.ID]; dup {
			s.opts.Logger.Warn("replica id listed twice; keeping the first", "replica", r.ID, "first", prev.Source, "second", r.Source)
			continue
		}
		next[r.ID] = r
	}
	byModel := map[string][]Replica{}
	for _, r := range next {
		byModel[r.Model] = append(byModel[r.Model], r)
	}
	for _, rs := range byModel {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	}
	s.mu.Lock()
	prev := s.byID
	s.byID, s.byModel = next, byModel
	var gone, joined, drain []string
	for id := range prev {
		if _, ok := next[id]; !ok {
			gone = append(gone, id)
			delete(s.breakers, id)
		}
	}
	for id, r := range next {
		if old, ok := prev[id]; ok && old.Draining != r.Draining {
			drain = append(drain, id)
		}
	}
	s.lora.rebuild(next, byModel)
	for id, r := range next {
		if old, ok := prev[id]; !ok || old.Model != r.Model {
			joined = append(joined, id)
			if ok {
				gone = append(gone, id) // moved model: its old index entries go
			}
		}
	}
	s.mu.Unlock()
	s.sizes.epoch.Add(1)
	s.forgetScraped(gone)
	sort.Strings(gone)
	sort.Strings(joined)
	for _, id := range gone {
		s.kv.Drop(id)
		s.tracker.Forget(id)
		s.opts.Logger.Info("replica left", "replica", id)
	}
	sort.Strings(drain)
	for _, id := range drain {
		if r := next[id]; r.Draining {
			s.opts.Logger.Info("replica draining: no new requests, KV state kept", "replica", id, "health", r.Health)
		} else {
			s.opts.Logger.Info("replica resumed", "replica", id)
		}
	}
	for _, id := range joined {
		s.opts.Logger.Info("replica joined", "replica", id, "model", next[id].Model, "address", next[id].Address)
		for _, d := range s.kv.Joined(member(next[id])) {
			if s.opts.Drivers != nil {
				s.opts.Drivers.Forget(d)
			}
		}
	}
}

// member is r as the KV ingest hears of it, with the block size its
// declared layout is read with (consul.DefaultBlockSize where r lists
// none).
func member(r Replica) ingest.Member {
	bs := r.BlockSize
	if bs <= 0 {
		bs = consul.DefaultBlockSize
	}
	return ingest.Member{ID: r.ID, Model: r.Model, BlockSize: bs, KVCacheGroups: r.KVCacheGroups}
}

// Get returns the replica with id.
func (s *Set) Get(id string) (Replica, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.byID[id]
	return r, ok
}

// ModelOf returns the model replica serves.
func (s *Set) ModelOf(replica string) (string, bool) {
	r, ok := s.Get(replica)
	return r.Model, ok
}

// Models lists the served models, sorted.
func (s *Set) Models() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := slices.Sorted(maps.Keys(s.byModel))
	return out
}

// All returns every replica, sorted by id.
func (s *Set) All() []Replica {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Replica, 0, len(s.byID))
	for _, r := range s.byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ForModel returns the replicas serving model, sorted by id; callers must
// not modify it. model may name a LoRA adapter (see SetAdapters): then the
// replicas are those of its base model that serve the adapter, and their
// Model is the base model.
func (s *Set) ForModel(model string) []Replica {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.forModelLocked(model)
}

func (s *Set) forModelLocked(model string) []Replica {
	if rs, ok := s.byModel[model]; ok {
		return rs
	}
	return s.lora.serving[model]
}

// Mode is replica's prefix knowledge: exact while a driver session holds
// its KV state and its block size is the one its model's prompts are
// keyed at (KeyBlockSize), approx otherwise (the router's own routing
// history).
func (s *Set) Mode(replica string) scheduler.Mode {
	if !s.kv.Synced(replica) {
		return scheduler.ModeApprox
	}
	if r, ok := s.Get(replica); ok && s.sizeReason(r) != "" {
		return scheduler.ModeApprox
	}
	return scheduler.ModeExact
}

// ModeReason says why replica is in approx mode though a driver sends its
// KV state: the index had no room for it (see router/ingest's refusals),
// its driver cannot key its blocks (an engine's event schema without a
// field some keys depend on), or its block size is not its model's key
// size. Empty otherwise.
func (s *Set) ModeReason(replica string) string {
	if r, ok := s.kv.(interface{ Refused(string) (string, bool) }); ok {
		if why, refused := r.Refused(replica); refused {
			return why
		}
	}
	if u, ok := s.kv.(interface{ Untrusted(string) (string, bool) }); ok {
		if why, untrusted := u.Untrusted(replica); untrusted {
			return why
		}
	}
	if r, ok := s.Get(replica); ok && s.kv.Synced(replica) {
		return s.sizeReason(r)
	}
	return ""
}

func (s *Set) closed(id string, now time.Time) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b := s.breakers[id]
	return b == nil || !now.Before(b.openUntil)
}

// Healthy reports whether replica's breaker lets requests through.
func (s *Set) Healthy(replica string) bool { return s.closed(replica, s.opts.Now()) }

// Failed records a failed attempt (connect error, 5xx before the first
// byte); enough in a row open the replica's breaker for the cooldown.
func (s *Set) Failed(replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[replica]; !ok {
		return
	}
	b := s.breakers[replica]
	if b == nil {
		b = &breaker{}
		s.breakers[replica] = b
	}
	b.failures++
	if b.failures >= s.opts.BreakerFailures {
		b.openUntil = s.opts.Now().Add(s.opts.BreakerCooldown)
		b.failures = s.opts.BreakerFailures - 1 // one more failure re-opens it
		s.opts.Logger.Warn("replica breaker open", "replica", replica, "cooldown", s.opts.BreakerCooldown)
	}
}

// Succeeded closes replica's breaker.
func (s *Set) Succeeded(replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.breakers, replica)
}

// HostPort joins a host and port into an address.
func HostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
