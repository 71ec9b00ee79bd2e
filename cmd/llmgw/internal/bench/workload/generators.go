package workload

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/trace"
)

// ChatOptions shape a multi-turn chat workload in the style of
// production-stack's multi-round QA: every user shares one system prompt and
// asks Rounds questions, each request carrying the whole history so far.
type ChatOptions struct {
	Users, Rounds int
	// SystemTokens is the shared system prompt's length; DocTokens a
	// document private to each user, opening its first question (0: none);
	// UserTokens each question's; ReplyTokens each answer's (asked as
	// max_tokens, and put into the history as a deterministic reply of
	// that length).
	SystemTokens, DocTokens, UserTokens, ReplyTokens int
	// Rate is the total arrival rate in requests per second (0: all at once).
	Rate float64
	Seed uint64
}

// Chat builds the chat workload. Arrivals are one Poisson process over all
// requests; arrival k is user k mod Users's round k / Users, and a round is
// sent no earlier than the previous round's answer (Request.After).
func Chat(o ChatOptions) (Workload, error) {
	if o.Users < 1 || o.Rounds < 1 || o.SystemTokens < 0 || o.DocTokens < 0 || o.UserTokens < 1 || o.ReplyTokens < 1 {
		return Workload{}, fmt.Errorf("chat workload: need users, rounds, user and reply tokens >= 1 and system and document tokens >= 0, got %+v", o)
	}
	rng := newRand(o.Seed, 1)
	system := Message{Role: "system", Content: words(rng, o.SystemTokens)}
	hist := make([][]Message, o.Users)
	for u := range hist {
		hist[u] = []Message{system}
	}
	at := poisson(rng, o.Users*o.Rounds, o.Rate)
	reqs := make([]Request, 0, len(at))
	for k, t := range at {
		u := k % o.Users
		q := words(rng, o.UserTokens)
		if k < o.Users && o.DocTokens > 0 {
			q = words(rng, o.DocTokens) + q
		}
		hist[u] = append(hist[u], Message{Role: "user", Content: q})
		after := -1
		if k >= o.Users {
			after = k - o.Users
		}
		reqs = append(reqs, Request{ID: k, At: t, After: after, Group: fmt.Sprintf("user-%d", u),
			Messages: slices.Clone(hist[u]), MaxTokens: o.ReplyTokens})
		hist[u] = append(hist[u], Message{Role: "assistant", Content: words(rng, o.ReplyTokens)})
	}
	return Workload{Name: "chat", Requests: reqs}, nil
}

// PrefixOptions shape shared-prefix groups (SGLang's generated-shared-prefix
// dataset): Groups long prefixes, each followed by PerGroup distinct
// suffixes, requests of all groups interleaved at random.
type PrefixOptions struct {
	Groups, PerGroup           int
	PrefixTokens, SuffixTokens int
	OutputTokens               int
	Rate                       float64
	Seed                       uint64
}

// SharedPrefix builds the shared-prefix workload.
func SharedPrefix(o PrefixOptions) (Workload, error) {
	if o.Groups < 1 || o.PerGroup < 1 || o.PrefixTokens < 1 || o.SuffixTokens < 1 || o.OutputTokens < 1 {
		return Workload{}, fmt.Errorf("shared-prefix workload: every count must be >= 1, got %+v", o)
	}
	rng := newRand(o.Seed, 2)
	prefixes := make([]string, o.Groups)
	for g := range prefixes {
		prefixes[g] = words(rng, o.PrefixTokens)
	}
	order := make([]int, 0, o.Groups*o.PerGroup)
	for g := range o.Groups {
		for range o.PerGroup {
			order = append(order, g)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	at := poisson(rng, len(order), o.Rate)
	reqs := make([]Request, len(order))
	for k, g := range order {
		reqs[k] = Request{ID: k, At: at[k], After: -1, Group: fmt.Sprintf("group-%d", g),
			Prompt: prefixes[g] + words(rng, o.SuffixTokens), MaxTokens: o.OutputTokens}
	}
	return Workload{Name: "shared-prefix", Requests: reqs}, nil
}

// SiblingOptions shape sibling bursts: Prompts problems, each sent as
// Samples identical requests at the same instant (n samples of one prompt,
// as best-of-n and agent fan-out do), all sharing a system prompt. Rate is
// in bursts per second.
type SiblingOptions struct {
	Prompts, Samples           int
	SystemTokens, PromptTokens int
	OutputTokens               int
	Rate                       float64
	Seed                       uint64
}

// Siblings builds the sibling-burst workload.
func Siblings(o SiblingOptions) (Workload, error) {
	if o.Prompts < 1 || o.Samples < 1 || o.SystemTokens < 0 || o.PromptTokens < 1 || o.OutputTokens < 1 {
		return Workload{}, fmt.Errorf("sibling workload: need prompts, samples, prompt and output tokens >= 1 and system tokens >= 0, got %+v", o)
	}
	rng := newRand(o.Seed, 3)
	system := words(rng, o.SystemTokens)
	at := poisson(rng, o.Prompts, o.Rate)
	reqs := make([]Request, 0, o.Prompts*o.Samples)
	for p, t := range at {
		prompt := system + words(rng, o.PromptTokens)
		for range o.Samples {
			reqs = append(reqs, Request{ID: len(reqs), At: t, After: -1, Group: fmt.Sprintf("prompt-%d", p),
				Prompt: prompt, MaxTokens: o.OutputTokens})
		}
	}
	return Workload{Name: "siblings", Requests: reqs}, nil
}

// ReplayOptions control a trace replay.
type ReplayOptions struct {
	// Rate > 0 replaces the trace's timestamps by Poisson arrivals at this
	// rate; 0 keeps the trace's own schedule.
	Rate float64
	// MaxRequests > 0 replays only the first MaxRequests entries.
	MaxRequests int
	Seed        uint64
}

// Replay turns a Mooncake trace into completion requests: each hash id is
// one deterministic block of the trace's block size, so equal ids are equal
// token blocks, and a prompt is its blocks cut to input_length tokens.
func Replay(tr trace.Trace, o ReplayOptions) (Workload, error) {
	if len(tr.Entries) == 0 || tr.BlockSize <= 0 {
		return Workload{}, errors.New("trace replay: empty trace")
	}
	entries := tr.Entries
	if o.MaxRequests > 0 && o.MaxRequests < len(entries) {
		entries = entries[:o.MaxRequests]
	}
	at := poisson(newRand(o.Seed, 4), len(entries), o.Rate)
	blocks := map[int64]string{}
	reqs := make([]Request, len(entries))
	for k, e := range entries {
		var sb []byte
		for _, id := range e.HashIDs {
			b, ok := blocks[id]
			if !ok {
				b = blockText(id, tr.BlockSize)
				blocks[id] = b
			}
			sb = append(sb, b...)
		}
		if o.Rate <= 0 {
			at[k] = time.Duration(e.Timestamp-entries[0].Timestamp) * time.Millisecond
		}
		reqs[k] = Request{ID: k, At: at[k], After: -1, Prompt: string(sb[:e.InputLength*tokenBytes]), MaxTokens: e.OutputLength}
	}
	return Workload{Name: "trace", Requests: reqs}, nil
}
