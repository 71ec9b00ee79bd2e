package driver

import (
	"fmt"
	"strings"
)

// reservedFlag is a vLLM flag the driver writes itself. A job's args come
// after the driver's flags and vLLM's parser keeps the last value, so the
// same flag in args would silently replace what the driver derived and
// what Consul advertises; validation refuses it instead.
type reservedFlag struct {
	// names are vLLM's spellings: the long name first, then short aliases.
	names []string
	// why says where the value comes from and what relies on it.
	why func(t *TaskConfig) string
	// field is the task config attribute to set instead, "" for none.
	field string
	// when reports whether the driver writes the flag for this task; nil
	// means always.
	when func(t *TaskConfig) bool
}

func leaderOnly(t *TaskConfig) bool { return t.rank() == 0 }

// reservedFlags lists every flag buildArgs writes, and the two that would
// undo one (--uds replaces --host and --port; --no-enable-prompt-tokens-details
// turns the flag off), with vLLM's spellings (vllm/engine/arg_utils.py,
// vllm/entrypoints/openai/cli_args.py; see docs/VLLM_PARITY.md).
var reservedFlags = []reservedFlag{
	{names: []string{"--model"}, field: "model", why: fixed("the driver passes model as vLLM's positional model")},
	{names: []string{"--host"}, when: leaderOnly, why: fixed("the driver serves the API on the host IP of the port Nomad allocated")},
	{names: []string{"--port"}, when: leaderOnly, field: "port", why: func(t *TaskConfig) string {
		return fmt.Sprintf("the driver serves the API on the port Nomad allocated to label %q, which the service advertises", t.Port)
	}},
	{names: []string{"--uds"}, when: leaderOnly, why: fixed("a Unix socket replaces the host and port the service advertises")},
	{names: []string{"--headless"}, field: "shard", why: fixed("the driver runs every shard but rank 0 headless")},
	{names: []string{"--served-model-name"}, field: "served_model_name",
		why: fixed("the driver serves the model as served_model_name, else model, the name routers list it under")},
	{names: []string{"--block-size"}, field: "block_size", why: func(t *TaskConfig) string {
		return fmt.Sprintf("the driver passes block_size (%d), the size routers hash prompts at and jobs validate checks meta llmgw-block-size against", t.BlockSize)
	}},
	{names: []string{"--tensor-parallel-size", "-tp"}, field: "tensor_parallel_size", why: fixed("the driver passes tensor_parallel_size")},
	{names: []string{"--data-parallel-size", "-dp"}, field: "data_parallel_size",
		why: fixed("the driver passes data_parallel_size and takes a KV event stream from each data-parallel rank")},
	{names: []string{"--max-model-len"}, field: "max_model_len",
		why: fixed("the driver passes max_model_len, which jobs validate checks meta llmgw-max-model-len against")},
	{names: []string{"--gpu-memory-utilization"}, field: "gpu_memory_utilization", why: fixed("the driver passes gpu_memory_utilization")},
	{names: []string{"--nnodes", "-n"}, field: "shard", why: shardWhy},
	{names: []string{"--node-rank", "-r"}, field: "shard", why: shardWhy},
	{names: []string{"--master-addr"}, field: "shard", why: shardWhy},
	{names: []string{"--master-port"}, field: "shard", why: shardWhy},
	{names: []string{"--enable-prompt-tokens-details"}, when: leaderOnly, field: "prompt_tokens_details", why: promptDetailsWhy},
	{names: []string{"--no-enable-prompt-tokens-details"}, when: leaderOnly, field: "prompt_tokens_details", why: promptDetailsWhy},
	{names: []string{"--kv-events-config"}, when: func(t *TaskConfig) bool { return t.KVEvents && t.rank() == 0 },
		why: fixed("kv_events is set, so the driver points the engine's events at the listener it opened for the replica")},
	{names: []string{"--kv-transfer-config"}, when: func(t *TaskConfig) bool { return t.disaggregated() }, field: "kv_role",
		why: func(t *TaskConfig) string {
			return fmt.Sprintf("role is %s, so the driver passes the NixlConnector with kv_role", t.Role)
		}},
}

func fixed(s string) func(*TaskConfig) string { return func(*TaskConfig) string { return s } }

func shardWhy(*TaskConfig) string { return "the driver places the shards of a multi-node replica" }

func promptDetailsWhy(*TaskConfig) string {
	return "the driver passes it unless prompt_tokens_details = false, so that usage reports cached tokens"
}

// validArgs refuses args that set a flag the driver writes for this task,
// in any spelling vLLM's parser accepts: --flag value, --flag=value,
// underscores for dashes, a dotted --flag.key value for JSON flags, a
// short alias, or an unambiguous prefix of the long name (argparse's
// abbreviations).
func (t *TaskConfig) validArgs() error {
	for i, a := range t.Args {
		for _, f := range reservedFlags {
			if f.when != nil && !f.when(t) {
				continue
			}
			if how, ok := f.matches(a); ok {
				fix := "remove it from args"
				if f.field != "" {
					fix = "set " + f.field + " in the task config instead"
				}
				return fmt.Errorf("args[%d]: %s%s: %s; %s", i, f.names[0], how, f.why(t), fix)
			}
		}
	}
	return nil
}

// matches reports whether the argument a sets the flag, and how it
// spelled it when not plainly.
func (f reservedFlag) matches(a string) (string, bool) {
	long := f.names[0]
	if strings.HasPrefix(a, "--") {
		name := longName(a)
		switch {
		case name == long:
			if name != a && !strings.HasPrefix(a, name+"=") {
				return " (as " + a + ")", true
			}
			return "", true
		case len(name) > 2 && strings.HasPrefix(long, name):
			return " (abbreviated " + name + ", which vLLM's parser takes for it)", true
		}
		return "", false
	}
	for _, short := range f.names[1:] {
		if a == short || strings.HasPrefix(a, short+"=") {
			return " (as " + short + ")", true
		}
		if len(short) == 2 && len(a) > 2 && strings.HasPrefix(a, short) && a[2] >= '0' && a[2] <= '9' {
			return " (as " + short + ")", true // -n2: argparse's joined short option
		}
	}
	return "", false
}

// longName is the flag a --name[.key][=value] argument sets, with vLLM's
// normalisation: underscores before the first dot read as dashes, and a
// dotted name sets the JSON flag before the dot.
func longName(a string) string {
	name, _, _ := strings.Cut(a, "=")
	name, _, _ = strings.Cut(name, ".")
	return strings.ReplaceAll(name, "_", "-")
}
