package route

import (
	"slices"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/tenant"
)

// Model is one entry of /v1/models: a base model (Parent "") or a LoRA
// adapter some replica serves, with its base model as Parent. Root and
// MaxModelLen are what vLLM's /v1/models says of a base model, as its
// replicas advertise them; "" and 0 when none does.
type Model struct {
	ID, Parent  string
	Root        string
	MaxModelLen int
}

// Models lists what t may use, base models first, then adapters, as vLLM
// lists them. A nil t lists everything. A model that scales from zero
// (Deps.Cold) is listed while it has no replica too: a client may ask for
// it.
func (pl *Planner) Models(t *tenant.Tenant) []Model {
	var out []Model
	for _, m := range pl.ModelNames() {
		if t == nil || t.Allows(m) {
			out = append(out, pl.baseModel(m))
		}
	}
	for _, a := range pl.d.Replicas.Adapters() {
		if t == nil || t.Allows(a.Name) {
			out = append(out, Model{ID: a.Name, Parent: a.Parent})
		}
	}
	return out
}

// baseModel is m's entry: the root of its first replica (by id) that
// advertises one, and the smallest max_model_len advertised, the longest
// context every replica that states one takes.
func (pl *Planner) baseModel(m string) Model {
	out := Model{ID: m}
	for _, r := range pl.d.Replicas.ForModel(m) {
		if out.Root == "" {
			out.Root = r.Root
		}
		if r.MaxModelLen > 0 && (out.MaxModelLen == 0 || r.MaxModelLen < out.MaxModelLen) {
			out.MaxModelLen = r.MaxModelLen
		}
	}
	return out
}

// ModelNames lists the base models the fleet serves, for readiness: those
// of its replicas, sorted, then those that scale from zero and have none.
// A router whose models are all at zero is ready, since a request is what
// starts one.
func (pl *Planner) ModelNames() []string {
	names := pl.d.Replicas.Models()
	if pl.d.Cold == nil {
		return names
	}
	for _, m := range pl.d.Cold.Models() {
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	return names
}

// ReplicaState is one replica as the admin API lists it.
type ReplicaState struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Address string `json:"address"`
	Source  string `json:"source"`
	// BlockSize is the size its keys are cut at: its engine's own
	// (EngineBlockSize) when known, else MetaBlockSize.
	BlockSize int `json:"block_size"`
	// MetaBlockSize is the size it advertises (Consul meta
	// llmgw-block-size, or a static replica's block_size).
	MetaBlockSize int `json:"meta_block_size"`
	// EngineBlockSize is the engine's own size (0: not known yet), from
	// its KV events or else vllm:cache_config_info (BlockSizeSource).
	EngineBlockSize int    `json:"engine_block_size,omitempty"`
	BlockSizeSource string `json:"block_size_source,omitempty"`
	// BlockSizeMismatch says how the engine's size disagrees with the
	// advertised one; the job's meta (or the driver's block_size) needs
	// fixing, though routing already uses the engine's size.
	BlockSizeMismatch string `json:"block_size_mismatch,omitempty"`
	KVEvents          bool   `json:"kv_events"`
	Mode              Mode   `json:"mode"`
	Role              string `json:"role"` // agg, prefill or decode
	// Task is what its engine serves (consul.MetaTask): generate, embed
	// or classify; it decides which endpoints' requests it gets.
	Task string `json:"task"`
	// ModeReason says why a replica whose driver sends KV events is in
	// approx mode: its model's index had no room for its state, or its
	// block size is not the one its model's prompts are keyed at.
	ModeReason string `json:"mode_reason,omitempty"`
	Healthy    bool   `json:"healthy"`
	// Draining: the Consul check warns or the replica is in maintenance
	// (Health says which); it finishes in-flight requests, takes no new ones.
	Draining  bool      `json:"draining"`
	Health    string    `json:"health,omitempty"`
	Adapters  []string  `json:"adapters,omitempty"`
	GPUBlocks int       `json:"gpu_blocks"`
	CPUBlocks int       `json:"cpu_blocks"`
	Load      load.Load `json:"load"`
	// PeerLoad is the part of Load's router-side counts that other routers
	// reported (router/peers).
	PeerLoad load.Peer `json:"peer_load"`
	// Hits sets this router's predicted hits against the engine's.
	Hits ReplicaHits `json:"hits"`
}

// ReplicaHits sets what this router predicted for the requests it sent a
// replica against what the engine reports, so that an operator can tell
// exact routing that hits from exact routing that only says so.
//
// Reported hits come from the engine's vllm:prefix_cache_queries and
// vllm:prefix_cache_hits counters, scraped since this router first saw
// the replica, not from answers' usage: vLLM sends
// usage.prompt_tokens_details only when started with
// --enable-prompt-tokens-details, and a stream carries no usage unless
// its client asked, while the counters count every request. They count
// every client's requests, so on a replica other routers also send to,
// the reported tokens exceed this router's predicted ones.
type ReplicaHits struct {
	PredictedPromptTokens uint64 `json:"predicted_prompt_tokens"`
	PredictedCachedTokens uint64 `json:"predicted_cached_tokens"`
	// ReportedFrom names the source of the Reported* figures:
	// "engine_counters", or "" when the engine exports no prefix-cache
	// counters (the Reported* figures are then 0 and mean nothing).
	ReportedFrom        string  `json:"reported_from"`
	ReportedQueryTokens float64 `json:"reported_query_tokens"`
	ReportedHitTokens   float64 `json:"reported_hit_tokens"`
}

// hitsOf is replica id's ReplicaHits.
func (pl *Planner) hitsOf(id string) ReplicaHits {
	p := pl.PredictedFor(id)
	h := ReplicaHits{PredictedPromptTokens: p.PromptTokens, PredictedCachedTokens: p.CachedTokens}
	if pl.d.EngineHits == nil {
		return h
	}
	if q, hit, known := pl.d.EngineHits(id); known {
		h.ReportedFrom, h.ReportedQueryTokens, h.ReportedHitTokens = "engine_counters", q, hit
	}
	return h
}

// Replicas lists every replica with what routing knows of it.
func (pl *Planner) Replicas() []ReplicaState {
	set := pl.d.Replicas
	out := []ReplicaState{}
	for _, r := range set.All() {
		gpu, cpu := pl.d.BlocksOf(r.Model, r.ID)
		bs := set.BlockSizes(r.ID)
		out = append(out, ReplicaState{
			ID: r.ID, Model: r.Model, Address: r.Address, Source: r.Source, KVEvents: r.KVEvents,
			BlockSize: bs.Effective(), MetaBlockSize: bs.Meta, EngineBlockSize: bs.Engine, BlockSizeSource: bs.Source, BlockSizeMismatch: bs.Mismatch(),
			Mode: set.Mode(r.ID), ModeReason: set.ModeReason(r.ID), Healthy: set.Healthy(r.ID), GPUBlocks: gpu, CPUBlocks: cpu,
			Draining: r.Draining, Health: r.Health, Adapters: set.AdaptersOf(r.ID), Role: r.Role.String(), Task: r.TaskOf(),
			Load: pl.d.Tracker.Load(r.ID), PeerLoad: pl.d.Tracker.PeerLoad(r.ID), Hits: pl.hitsOf(r.ID),
		})
	}
	return out
}
