package workload

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The workloads the peers' own benchmarks and today's agent traces are
// shaped on: llm-d's B2B SaaS shared-prefix benchmark, and coding-agent
// sessions with sub-agent groups. Each is deterministic from its seed.

// B2BSaaS is llm-d's shared-prefix benchmark shape (the optimized-baseline
// guide's shared_prefix.yaml): 150 groups of 5 prompts, each group a
// 6,000-token system prompt followed by 1,200-token questions.
const (
	b2bGroups, b2bPerGroup        = 150, 5
	b2bSystemTokens, b2bQuestions = 6000, 1200
)

// B2BSaaSOptions shape the B2B SaaS workload. Groups defaults to llm-d's
// 150 when 0 (a sweep sizes it); MaxModelLen, when the prompts and answer
// do not fit it, scales the system prompt and the questions down by the
// same factor, so that their 5:1 ratio and the share of the prompt that
// repeats stay llm-d's.
type B2BSaaSOptions struct {
	Groups       int
	MaxModelLen  int
	OutputTokens int
	Rate         float64
	Seed         uint64
}

// B2BSaaS builds the B2B SaaS workload: requests of all groups interleaved
// at random, Poisson arrivals at Rate.
func B2BSaaS(o B2BSaaSOptions) (Workload, error) {
	groups := o.Groups
	if groups == 0 {
		groups = b2bGroups
	}
	system, question := B2BSaaSSizes(o.MaxModelLen, o.OutputTokens)
	if groups < 0 || question < 1 || o.OutputTokens < 1 {
		return Workload{}, fmt.Errorf("b2b-saas workload: need groups >= 0, output tokens >= 1 and room for a question under max-model-len, got %+v", o)
	}
	w, err := SharedPrefix(PrefixOptions{Groups: groups, PerGroup: b2bPerGroup, PrefixTokens: system, SuffixTokens: question,
		OutputTokens: o.OutputTokens, Rate: o.Rate, Seed: o.Seed})
	w.Name = "b2b-saas"
	return w, err
}

// B2BSaaSSizes are the system prompt's and a question's tokens under
// maxModelLen (0: unscaled) with outputTokens of answer: llm-d's 6,000 and
// 1,200 when they fit, else both times (maxModelLen - outputTokens)/7,200.
func B2BSaaSSizes(maxModelLen, outputTokens int) (system, question int) {
	f := 1.0
	if room := maxModelLen - outputTokens; maxModelLen > 0 && room < b2bSystemTokens+b2bQuestions {
		f = float64(max(room, 0)) / (b2bSystemTokens + b2bQuestions)
	}
	return int(b2bSystemTokens * f), int(b2bQuestions * f)
}

// AgentOptions shape coding-agent sessions on the published statistics of
// Claude Code traces: every main-agent turn resends the session's context
// plus about 600 new tokens, 96% of turns reuse at least 90% of their
// input, calls come about 2 s apart at the median, and sub-agents come in
// groups of 7 at the median and 51 at the 90th percentile, all opening
// with the parent's head.
type AgentOptions struct {
	// Sessions start at Rate a second (Poisson) and each runs Turns
	// main-agent turns.
	Sessions, Turns int
	// HeadTokens is the head every session and sub-agent opens with (the
	// agent's system prompt and tool definitions); TurnTokens the mean of
	// what a turn adds to the context (uniform within 25%), its answer
	// included.
	HeadTokens, TurnTokens int
	// BigTurnShare is the share of turns that add a quarter of the
	// context at once (a large file read), reusing under 90% of it.
	BigTurnShare float64
	// GapMedian is the median gap between a session's calls (log-normal,
	// GapSigma its log standard deviation).
	GapMedian time.Duration
	GapSigma  float64
	// SubAgentShare is the share of turns after the first that spawn a
	// group of sub-agents: log-normal sizes with median GroupMedian and
	// 90th percentile GroupP90, at most MaxGroup; each sub-agent sends
	// the head and a task of TaskTokens.
	SubAgentShare                   float64
	GroupMedian, GroupP90, MaxGroup int
	TaskTokens, OutputTokens        int
	Rate                            float64
	Seed                            uint64
}

// DefaultAgentOptions are 16 sessions of 12 turns over a 7,000-token head
// (so that a first turn of 600 new tokens reuses 92% of its input): with
// a 24-token answer a session's last turn carries about 13,600 tokens.
func DefaultAgentOptions() AgentOptions {
	return AgentOptions{Sessions: 16, Turns: 12, HeadTokens: 7000, TurnTokens: 600, BigTurnShare: 0.04,
		GapMedian: 2 * time.Second, GapSigma: 1, SubAgentShare: 0.1, GroupMedian: 7, GroupP90: 51, MaxGroup: 64,
		TaskTokens: 600, OutputTokens: 24, Rate: 0.5, Seed: 1}
}

func (o AgentOptions) check() error {
	if o.Sessions < 1 || o.Turns < 1 || o.HeadTokens < 1 || o.TurnTokens <= o.OutputTokens || o.OutputTokens < 1 ||
		o.TaskTokens < 1 || !(o.BigTurnShare >= 0 && o.BigTurnShare <= 1) || !(o.SubAgentShare >= 0 && o.SubAgentShare <= 1) ||
		o.GapMedian <= 0 || !(o.GapSigma >= 0) || o.GroupMedian < 1 || o.GroupP90 < o.GroupMedian || o.MaxGroup < o.GroupP90 {
		return fmt.Errorf("coding-agent workload: need sessions, turns, head, task and output tokens >= 1, turn tokens > output tokens, "+
			"shares in [0, 1], a positive gap and 1 <= group median <= p90 <= max group, got %+v", o)
	}
	return nil
}

// CodingAgent builds the coding-agent workload: each main-agent turn waits
// for the previous one's answer and for its own gap; a turn's sub-agents
// are sent together when its answer (their launch) is in.
func CodingAgent(o AgentOptions) (Workload, error) {
	if err := o.check(); err != nil {
		return Workload{}, err
	}
	rng := newRand(o.Seed, 7)
	head := words(rng, o.HeadTokens)
	size := newGroupSizes(o.GroupMedian, o.GroupP90, o.MaxGroup)
	starts := poisson(rng, o.Sessions, o.Rate)
	var reqs []Request
	for s, start := range starts {
		ctx, at, prev := head, start, -1
		for turn := range o.Turns {
			group := fmt.Sprintf("session-%d", s)
			if turn > 0 {
				at += logNormal(rng, o.GapMedian, o.GapSigma)
			}
			grow := o.TurnTokens*3/4 + rng.IntN(o.TurnTokens/2+1) // uniform, TurnTokens +- 25%
			if turn > 0 && rng.Float64() < o.BigTurnShare {
				grow = len(ctx) / tokenBytes / 4
			}
			prompt := ctx + words(rng, max(grow-o.OutputTokens, 1))
			reqs = append(reqs, Request{ID: len(reqs), At: at, After: prev, Group: group, Prompt: prompt, MaxTokens: o.OutputTokens})
			prev = len(reqs) - 1
			if turn > 0 && rng.Float64() < o.SubAgentShare {
				for k := range size.draw(rng) {
					reqs = append(reqs, Request{ID: len(reqs), At: at, After: prev, Group: fmt.Sprintf("%s-turn-%d-sub-%d", group, turn, k),
						Prompt: head + words(rng, o.TaskTokens), MaxTokens: o.OutputTokens})
				}
			}
			ctx = prompt + words(rng, o.OutputTokens) // the answer joins the context
		}
	}
	return Workload{Name: "coding-agent", Requests: inArrivalOrder(reqs)}, nil
}

// groupSizes draw sub-agent group sizes: log-normal with median m and 90th
// percentile p (mu = ln m, sigma = ln(p/m)/z(0.9)), rounded, within
// [1, max].
type groupSizes struct {
	mu, sigma float64
	max       int
}

func newGroupSizes(median, p90, most int) groupSizes {
	const z90 = 1.2815515655446004 // the standard normal's 90th percentile
	return groupSizes{mu: math.Log(float64(median)), sigma: math.Log(float64(p90)/float64(median)) / z90, max: most}
}

func (g groupSizes) draw(rng *rand.Rand) int {
	return min(g.max, max(1, int(math.Round(math.Exp(g.mu+g.sigma*rng.NormFloat64())))))
}

// logNormal is a log-normal duration with the given median and log
// standard deviation.
func logNormal(rng *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
}

// inArrivalOrder sorts reqs by arrival (stably, so a session's turns keep
// their order) and renumbers them, their After following.
func inArrivalOrder(reqs []Request) []Request {
	slices.SortStableFunc(reqs, func(a, b Request) int { return cmp.Compare(a.At, b.At) })
	pos := make(map[int]int, len(reqs))
	for i := range reqs {
		pos[reqs[i].ID] = i
	}
	for i := range reqs {
		reqs[i].ID = i
		if reqs[i].After >= 0 {
			reqs[i].After = pos[reqs[i].After]
		}
	}
	return reqs
}
