package workload

import "fmt"

// Workloads that separate good routers from merely adequate ones: many
// sessions whose histories overflow the caches, agentic fan-out bursts,
// and a few huge tenant prompts among many unique ones. Each is
// deterministic from its seed.

// SessionOptions shape the many-session chat workload: Sessions
// conversations of Rounds rounds, each opening with a long private
// document, so that together their histories overflow the fleet's KV
// caches and eviction decides what a replica still holds.
type SessionOptions struct {
	Sessions, Rounds int
	// SystemTokens is the shared system prompt; DocTokens the document
	// opening each session; UserTokens each question; ReplyTokens each
	// answer.
	SystemTokens, DocTokens, UserTokens, ReplyTokens int
	Rate                                             float64
	Seed                                             uint64
}

// DefaultSessionOptions are 256 sessions of 4 rounds with 2,000-token
// documents: over half a million tokens of history in all, far more than
// a small fleet of simulated shards caches.
func DefaultSessionOptions() SessionOptions {
	return SessionOptions{Sessions: 256, Rounds: 4, SystemTokens: 200, DocTokens: 2000, UserTokens: 80, ReplyTokens: 24, Rate: 8, Seed: 1}
}

// ManySessions builds the many-session chat workload: the chat workload's
// shape (each round resends the history and waits for the previous
// answer) at a scale where caches overflow.
func ManySessions(o SessionOptions) (Workload, error) {
	if o.Sessions < 1 || o.DocTokens < 1 {
		return Workload{}, fmt.Errorf("many-session workload: need sessions and document tokens >= 1, got %+v", o)
	}
	w, err := Chat(ChatOptions{Users: o.Sessions, Rounds: o.Rounds, SystemTokens: o.SystemTokens, DocTokens: o.DocTokens,
		UserTokens: o.UserTokens, ReplyTokens: o.ReplyTokens, Rate: o.Rate, Seed: o.Seed})
	if err != nil {
		return Workload{}, fmt.Errorf("many-session workload: %w", err)
	}
	w.Name = "many-session"
	return w, nil
}

// FanOutOptions shape agentic fan-out: an agent holds one long context
// and, at each step, sends a burst of sibling requests (tool calls,
// sub-agents) that all start with the context and arrive together; the
// step's outcome is appended to the context before the next burst.
type FanOutOptions struct {
	// Bursts is the number of steps; each sends MinFanOut..MaxFanOut
	// siblings (uniformly).
	Bursts, MinFanOut, MaxFanOut int
	// Agents is how many agents, each with its own context, take turns
	// at the bursts (burst b is agent b mod Agents's); 0 means 1. A
	// fleet serves many agents at once, and their contexts together are
	// what a router that copies every context to every replica cannot
	// keep cached.
	Agents int
	// ContextTokens is the shared context at the first step; StepTokens
	// what each step appends to it; TaskTokens each sibling's own task.
	ContextTokens, StepTokens, TaskTokens int
	OutputTokens                          int
	// Rate is in bursts per second.
	Rate float64
	Seed uint64
}

// DefaultFanOutOptions are 12 bursts of 8-32 siblings over a 3,000-token
// context growing by 200 tokens a step.
func DefaultFanOutOptions() FanOutOptions {
	return FanOutOptions{Bursts: 12, MinFanOut: 8, MaxFanOut: 32, ContextTokens: 3000, StepTokens: 200, TaskTokens: 60,
		OutputTokens: 24, Rate: 0.5, Seed: 1}
}

// maxAgents bounds FanOutOptions.Agents, whose contexts are all held in
// memory while the workload is built.
const maxAgents = 4096

// FanOut builds the agentic fan-out workload. Here speculative credit
// (siblings follow the first before the engine reports its cache) and
// load balance (32 siblings on one replica queue behind each other) pull
// apart.
func FanOut(o FanOutOptions) (Workload, error) {
	if o.Bursts < 1 || o.MinFanOut < 1 || o.MaxFanOut < o.MinFanOut || o.ContextTokens < 1 || o.StepTokens < 0 ||
		o.TaskTokens < 1 || o.OutputTokens < 1 || o.Agents < 0 || o.Agents > maxAgents {
		return Workload{}, fmt.Errorf("fan-out workload: need bursts, context, task and output tokens >= 1, step tokens >= 0, 1 <= min <= max fan-out and 0..%d agents, got %+v", maxAgents, o)
	}
	agents := max(o.Agents, 1)
	rng := newRand(o.Seed, 5)
	contexts := []string{words(rng, o.ContextTokens)}
	at := poisson(rng, o.Bursts, o.Rate)
	for range agents - 1 {
		// After the arrivals, so that one agent draws what it always did.
		contexts = append(contexts, words(rng, o.ContextTokens))
	}
	var reqs []Request
	for b, t := range at {
		a := b % agents
		group := fmt.Sprintf("burst-%d", b)
		if agents > 1 {
			group = fmt.Sprintf("agent-%d-burst-%d", a, b)
		}
		n := o.MinFanOut + rng.IntN(o.MaxFanOut-o.MinFanOut+1)
		for range n {
			reqs = append(reqs, Request{ID: len(reqs), At: t, After: -1, Group: group,
				Prompt: contexts[a] + words(rng, o.TaskTokens), MaxTokens: o.OutputTokens})
		}
		contexts[a] += words(rng, o.StepTokens)
	}
	return Workload{Name: "fan-out", Requests: reqs}, nil
}

// TenantOptions shape mixed tenants: a few tenants with huge system
// prompts that many requests share, among many requests with unique
// prompts. Tenant t's share of the shared traffic is proportional to
// 1/(t+1), so one tenant is hot.
type TenantOptions struct {
	Requests, Tenants int
	// SharedShare is the share of requests that belong to a tenant (the
	// rest are unique prompts of UniqueTokens).
	SharedShare float64
	// SystemTokens is each tenant's system prompt; QuestionTokens what
	// each tenant request adds; UniqueTokens a unique prompt's length.
	SystemTokens, QuestionTokens, UniqueTokens int
	OutputTokens                               int
	Rate                                       float64
	Seed                                       uint64
}

// DefaultTenantOptions are 240 requests, half from 3 tenants with
// 3,000-token system prompts, half unique 800-token prompts.
func DefaultTenantOptions() TenantOptions {
	return TenantOptions{Requests: 240, Tenants: 3, SharedShare: 0.5, SystemTokens: 3000, QuestionTokens: 60, UniqueTokens: 800,
		OutputTokens: 24, Rate: 4, Seed: 1}
}

// MixedTenants builds the mixed-tenant workload. A router that piles the
// hot tenant's requests onto the replica caching its prompt, while unique
// prompts keep arriving, queues them behind each other.
func MixedTenants(o TenantOptions) (Workload, error) {
	if o.Requests < 1 || o.Tenants < 1 || !(o.SharedShare >= 0 && o.SharedShare <= 1) || o.SystemTokens < 1 ||
		o.QuestionTokens < 1 || o.UniqueTokens < 1 || o.OutputTokens < 1 {
		return Workload{}, fmt.Errorf("mixed-tenant workload: need requests, tenants and token counts >= 1 and a shared share in [0, 1], got %+v", o)
	}
	rng := newRand(o.Seed, 6)
	systems := make([]string, o.Tenants)
	weight := make([]float64, o.Tenants) // cumulative 1/(t+1)
	sum := 0.0
	for t := range systems {
		systems[t] = words(rng, o.SystemTokens)
		sum += 1 / float64(t+1)
		weight[t] = sum
	}
	at := poisson(rng, o.Requests, o.Rate)
	reqs := make([]Request, len(at))
	for k, t := range at {
		r := Request{ID: k, At: t, After: -1, MaxTokens: o.OutputTokens}
		if rng.Float64() < o.SharedShare {
			x, tenant := rng.Float64()*sum, 0
			for weight[tenant] < x {
				tenant++
			}
			r.Group, r.Prompt = fmt.Sprintf("tenant-%d", tenant), systems[tenant]+words(rng, o.QuestionTokens)
		} else {
			r.Group, r.Prompt = "unique", words(rng, o.UniqueTokens)
		}
		reqs[k] = r
	}
	return Workload{Name: "mixed-tenants", Requests: reqs}, nil
}
