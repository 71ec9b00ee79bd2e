package bench

import (
	"fmt"
	"strings"
)

// Policy is a routing policy under test: a name and the body of the router
// config's scheduler block ("" is the router's default); Router gives the
// top-level router options it runs with besides.
type Policy struct {
	Name      string
	Scheduler string
}

// routerOptions are the policies that run with top-level router options
// beside their scheduler block (HCL), by name: options such as
// pin_data_parallel_rank are no part of the scheduler.
var routerOptions = map[string]string{
	"precise-prefix-unpinned": "pin_data_parallel_rank = false",
}

// Router is the top-level router HCL p runs with ("" for none), which
// the fleet appends to each router's config.
func (p Policy) Router() string { return routerOptions[p.Name] }

// filters every policy shares: the model's replicas that pass their checks.
const filters = "filter \"model\" {}\nfilter \"healthy\" {}\n"

// Policies are the policies llmgw bench can compare, in the order they
// run: the round-robin baseline, load alone, approximate prefix routing
// from the router's own history (as routers without KV events route),
// llmgw's default before the ttft scorer weighed cached prefixes against
// queued prefill (prefix-load, not run unless asked for), and precise
// prefix routing from KV events, llmgw's default. The next two are the
// default with another hit rule for hybrid replicas (the prefix scorer's
// kv_groups_rule), not run unless asked for: every KV-cache group counted
// as full attention, as llmgw did before it kept groups apart, and the
// full-attention groups alone, as Dynamo does. On full-attention shards
// they route as precise-prefix does; on hybrid ones (-sim-args
// "--sim-kv-cache-groups ...") they measure what the engine's rule buys.
// precise-prefix-no-spec is the default without the prefix scorer's
// speculative credit, where the engines' KV events alone say what a
// replica caches: a candidate for agentic fan-out, where the credit keeps
// a burst's siblings on the replica the first went to before it has
// prefilled their context; the rate sweeps found it within noise of the
// default there and behind it where a chat round follows the previous
// one before its KV events arrive (router/scheduler/README.md,
// "Speculative credit and fan-out"). precise-prefix-queued0 is the
// default with the prefix scorer's queued_credit at 0: the prefix score
// ignores speculative credit on a replica still prefilling, so a cold
// burst spreads, while ttft keeps pricing the credit (README,
// "Credit for a prefill still queued"). precise-prefix-no-copies is the
// default without its replicator: no prompt is sent to copy a hot prefix
// to an idle replica, so a comparison says what the copies are worth
// (README, "Replicator"). precise-prefix-unpinned is the
// default with the router's pin_data_parallel_rank off (routerOptions):
// on data-parallel replicas (-data-parallel-size) the engine then picks
// each request's rank by load, as vLLM's DP client does, instead of the
// rank whose cache the router counted on; on replicas of one rank it
// routes as precise-prefix does. Then the peers' published policies
// (peers.go), run when asked for.
func Policies() []Policy {
	return append([]Policy{
		{"round-robin", filters + "picker \"round-robin\" {}\n"},
		{"least-loaded", filters + "scorer \"load\" {\n  weight = 1\n}\npicker \"max-score\" {}\n"},
		{"approx-prefix", filters + "scorer \"approx-prefix\" {\n  weight = 1\n  params = { ignore_events = true }\n}\n" +
			"scorer \"ttft\" {\n  weight = 4\n}\nscorer \"load\" {\n  weight = 1\n}\npicker \"max-score\" {}\n"},
		{"prefix-load", filters + "scorer \"prefix\" {\n  weight = 2\n}\nscorer \"approx-prefix\" {\n  weight = 2\n}\n" +
			"scorer \"load\" {\n  weight = 1\n}\nscorer \"session\" {\n  weight = 3\n}\npicker \"max-score\" {}\n"},
		{"precise-prefix", ""},
		{"precise-prefix-all-full", defaultWithRule("all_full")},
		{"precise-prefix-full-only", defaultWithRule("full_only")},
		{"precise-prefix-queued0", defaultWithPrefixParams("queued_credit = 0")},
		{"precise-prefix-no-spec", defaultWithPrefixParams("speculative_ttl = \"0s\"")},
		{"precise-prefix-no-copies", defaultScheduler("", false)},
		{"precise-prefix-unpinned", ""},
	}, peerPolicies()...)
}

// defaultWithRule is the router's default scheduler with the prefix
// scorer's kv_groups_rule set to rule.
func defaultWithRule(rule string) string {
	return defaultWithPrefixParams("kv_groups_rule = \"" + rule + "\"")
}

// defaultWithPrefixParams is the router's default scheduler with the
// prefix scorer's params set to the HCL attributes params.
func defaultWithPrefixParams(params string) string {
	return defaultScheduler(params, true)
}

// defaultScheduler is the router's default scheduler with the prefix
// scorer's params set to the HCL attributes params (none when ""), and
// without the hot-prefix replicator unless copies.
func defaultScheduler(params string, copies bool) string {
	prefix := "scorer \"prefix\" {\n  weight = 1\n"
	if params != "" {
		prefix += "  params = { " + params + " }\n"
	}
	s := filters + prefix + "}\n" +
		"scorer \"approx-prefix\" {\n  weight = 1\n}\nscorer \"ttft\" {\n  weight = 4\n}\nscorer \"load\" {\n  weight = 1\n}\n" +
		"scorer \"session\" {\n  weight = 3\n}\npicker \"max-score\" {}\n"
	if copies {
		s += "replicator \"hot-prefix\" {}\n"
	}
	return s
}

// SelectPolicies returns the named policies, in the order given; a comma
// list such as "round-robin,precise-prefix". Besides Policies it knows the
// disaggregated policy (disagg.go), which restarts the shards.
func SelectPolicies(list string) ([]Policy, error) {
	all := append(Policies(), pdPolicies()...)
	var out []Policy
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, p := range all {
			if p.Name == name {
				out, found = append(out, p), true
			}
		}
		if !found {
			names := make([]string, len(all))
			for i, p := range all {
				names[i] = p.Name
			}
			return nil, fmt.Errorf("unknown policy %q (have %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}
