package main

import (
	"flag"
	"fmt"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// stressFlags are the flags of the workloads that separate good routers
// from adequate ones (many-session, fan-out, mixed-tenants, b2b-saas,
// coding-agent); they share
// -rate, -seed and the chat flags for what the workloads have in common.
type stressFlags struct {
	sessions                     int
	bursts, fanOutMin, fanOutMax int
	contextTokens, agents        int
	requests, tenants            int
	tenantShare                  float64
	tenantTokens, uniqueTokens   int
	b2bGroups                    int
	agentSessions, agentTurns    int
}

func (s *stressFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&s.sessions, "sessions", 256, "many-session: chat sessions (with -rounds, -system-tokens, -doc-tokens, -user-tokens)")
	fs.IntVar(&s.bursts, "bursts", 12, "fan-out: bursts (-rate is bursts per second)")
	fs.IntVar(&s.fanOutMin, "fanout-min", 8, "fan-out: fewest siblings in a burst")
	fs.IntVar(&s.fanOutMax, "fanout-max", 32, "fan-out: most siblings in a burst")
	fs.IntVar(&s.contextTokens, "context-tokens", 3000, "fan-out: the agent's shared context at the first burst (it grows 200 tokens a burst)")
	fs.IntVar(&s.agents, "agents", 1, "fan-out: agents, each with its own context, taking turns at the bursts")
	fs.IntVar(&s.requests, "requests", 240, "mixed-tenants: requests")
	fs.IntVar(&s.tenants, "tenants", 3, "mixed-tenants: tenants with a shared system prompt (tenant t gets 1/(t+1) of the shared traffic)")
	fs.Float64Var(&s.tenantShare, "tenant-share", 0.5, "mixed-tenants: share of requests from a tenant; the rest are unique prompts")
	fs.IntVar(&s.tenantTokens, "tenant-tokens", 3000, "mixed-tenants: each tenant's system prompt tokens")
	fs.IntVar(&s.uniqueTokens, "unique-tokens", 800, "mixed-tenants: tokens of a unique prompt")
	fs.IntVar(&s.b2bGroups, "b2b-groups", 150, "b2b-saas: groups of 5 prompts (llm-d's 150), each a shared system prompt and questions scaled to -max-model-len")
	fs.IntVar(&s.agentSessions, "agent-sessions", 16, "coding-agent: sessions (-rate is sessions per second)")
	fs.IntVar(&s.agentTurns, "agent-turns", 12, "coding-agent: main-agent turns per session")
}

// build makes the stress workload c names; ok is false for other names.
func (s *stressFlags) build(c *benchConfig) (w workload.Workload, setup string, ok bool, err error) {
	switch c.workload {
	case "many-session":
		w, err = workload.ManySessions(workload.SessionOptions{Sessions: s.sessions, Rounds: c.rounds, SystemTokens: c.systemTokens,
			DocTokens: c.docTokens, UserTokens: c.userTokens, ReplyTokens: c.outputTokens, Rate: c.rate, Seed: c.seed})
		return w, fmt.Sprintf("%d sessions x %d rounds, %d-token shared system prompt, %d-token document per session, %d-token questions, %d-token answers",
			s.sessions, c.rounds, c.systemTokens, c.docTokens, c.userTokens, c.outputTokens), true, err
	case "fan-out":
		w, err = workload.FanOut(workload.FanOutOptions{Bursts: s.bursts, MinFanOut: s.fanOutMin, MaxFanOut: s.fanOutMax, Agents: s.agents,
			ContextTokens: s.contextTokens, StepTokens: 200, TaskTokens: c.userTokens, OutputTokens: c.outputTokens, Rate: c.rate, Seed: c.seed})
		agents := "an agent context"
		if s.agents > 1 {
			agents = fmt.Sprintf("%d agents' contexts (taking turns)", s.agents)
		}
		return w, fmt.Sprintf("%d bursts of %d-%d siblings over %s of %d tokens growing 200 tokens a burst, %d-token tasks, %d-token answers",
			s.bursts, s.fanOutMin, s.fanOutMax, agents, s.contextTokens, c.userTokens, c.outputTokens), true, err
	case "mixed-tenants":
		w, err = workload.MixedTenants(workload.TenantOptions{Requests: s.requests, Tenants: s.tenants, SharedShare: s.tenantShare,
			SystemTokens: s.tenantTokens, QuestionTokens: c.userTokens, UniqueTokens: s.uniqueTokens, OutputTokens: c.outputTokens,
			Rate: c.rate, Seed: c.seed})
		return w, fmt.Sprintf("%d requests, %.0f%% from %d tenants with %d-token system prompts, the rest unique %d-token prompts, %d-token answers",
			s.requests, 100*s.tenantShare, s.tenants, s.tenantTokens, s.uniqueTokens, c.outputTokens), true, err
	case "b2b-saas":
		w, err = workload.B2BSaaS(workload.B2BSaaSOptions{Groups: s.b2bGroups, MaxModelLen: c.maxModelLen, OutputTokens: c.outputTokens,
			Rate: c.rate, Seed: c.seed})
		system, question := workload.B2BSaaSSizes(c.maxModelLen, c.outputTokens)
		return w, fmt.Sprintf("llm-d's b2b-saas shape: %d groups x 5 requests, %d-token shared system prompt, %d-token questions, %d-token answers",
			s.b2bGroups, system, question, c.outputTokens), true, err
	case "coding-agent":
		o := workload.DefaultAgentOptions()
		o.Sessions, o.Turns, o.OutputTokens, o.Rate, o.Seed = s.agentSessions, s.agentTurns, c.outputTokens, c.rate, c.seed
		w, err = workload.CodingAgent(o)
		return w, fmt.Sprintf("%d coding-agent sessions x %d turns over a %d-token shared head, about %d tokens a turn, calls %s apart at the median, "+
			"sub-agent groups (median %d, p90 %d) after %.0f%% of turns, %d-token answers",
			o.Sessions, o.Turns, o.HeadTokens, o.TurnTokens, o.GapMedian, o.GroupMedian, o.GroupP90, 100*o.SubAgentShare, c.outputTokens), true, err
	}
	return workload.Workload{}, "", false, nil
}
