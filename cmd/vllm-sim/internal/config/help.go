package config

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// flagHelp is one flag's line in `vllm-sim serve -h`: its name (a key of
// flags), the placeholder of its value ("" for a boolean) and what it does.
type flagHelp struct {
	name, arg, text string
}

// vllmHelp and simHelp list every flag in flags, in the order help shows
// them: vLLM's first, as `vllm serve -h` groups its own, then the
// simulator's. A test holds the lists and flags to the same names.
var vllmHelp = []flagHelp{
	{"host", "HOST", "address to listen on"},
	{"port", "PORT", "port to listen on; 0 picks a free one"},
	{"served-model-name", "NAME", "the model name clients use (default: MODEL); repeat for more names"},
	{"api-key", "KEY...", "keys a /v1 request must present as a bearer token (default: $VLLM_API_KEY, else none)"},
	{"block-size", "N", "tokens per KV-cache block"},
	{"num-gpu-blocks-override", "N", "KV-cache blocks in (simulated) GPU memory"},
	{"max-num-seqs", "N", "sequences an engine runs at once"},
	{"max-model-len", "N", "longest prompt plus answer, in tokens"},
	{"max-num-batched-tokens", "N", "tokens one scheduler step may compute"},
	{"tensor-parallel-size", "N", "GPUs per engine; reported in kv_transfer_params (tp_size)"},
	{"data-parallel-size", "N", "engines (data-parallel ranks) in the replica"},
	{"data-parallel-rank", "N", "run only this rank (-1: every rank, KV events on offset ports)"},
	{"headless", "", "run the engines without an API server, as a non-leader node"},
	{"tokenizer", "DIR", "a Hugging Face tokenizer directory (default: a built-in deterministic tokenizer)"},
	{"seed", "N", "seed of the generated tokens"},
	{"enable-prefix-caching", "", "reuse cached prompt blocks (default for a pooling model: on unless --pooler-config pools MEAN or CLS)"},
	{"runner", "auto|generate|pooling", "pooling serves the pooling API (embeddings, pooling, classify, score, rerank) instead of generation"},
	{"convert", "auto|embed|classify", "the pooling task: embed (the default for --runner pooling) or classify"},
	{"pooler-config", "JSON", "the pooler, as vLLM's (seq_pooling_type: LAST, ALL, MEAN, CLS)"},
	{"enable-lora", "", "serve LoRA adapters"},
	{"enable-prompt-tokens-details", "", "report usage.prompt_tokens_details.cached_tokens in chat and completion answers"},
	{"lora-modules", "NAME=PATH...", "adapters served under their own names (also as JSON {\"name\":..,\"path\":..})"},
	{"kv-events-config", "JSON", "KV-cache events, as vLLM's (enable_kv_cache_events, publisher, endpoint, replay_endpoint, topic, ...)"},
	{"kv-transfer-config", "JSON", "disaggregated prefill and decode, as vLLM's NixlConnector (kv_connector, kv_role, engine_id, ...)"},
}

var simHelp = []flagHelp{
	{"sim-latency", "", "the latency model; false answers as fast as possible (functional tests)"},
	{"sim-overhead", "DURATION", "per-request API time before scheduling"},
	{"sim-prefill-per-token", "DURATION", "cost of one uncached prompt token"},
	{"sim-inter-token-latency", "DURATION", "base cost of one scheduler step (one decode token per running sequence)"},
	{"sim-load-factor", "X", "step slowdown when --max-num-seqs sequences run (linear from 1)"},
	{"sim-cpu-offload-blocks", "N", "a CPU tier of this many blocks, playing vLLM's offloading connector"},
	{"sim-cpu-offload-block-size", "N", "the CPU tier's block size in tokens, a multiple of --block-size (the connector's block_size)"},
	{"sim-cpu-offload-placeholders", "", "send the CPU tier's stores with block_size 0, as the connector does without self_describing_kv_events"},
	{"sim-cpu-load-per-token", "DURATION", "cost of loading one token from the CPU tier"},
	{"sim-event-format", "array|map", "KV event encoding; map for vLLM's post-#42892 one"},
	{"sim-event-schema", "N", "BlockStored array length of an older vLLM: 6, 7, 8, 9, 10 or 12"},
	{"sim-replay-format", "new|old", "old for the replay reply shape before vLLM 0.26"},
	{"sim-kv-bytes-per-token", "N|config", "KV bytes of one token, for a disaggregated pull's size; config reads config.json"},
	{"sim-kv-transfer-bandwidth", "BYTES/S", "bytes per second of a disaggregated pull"},
	{"sim-num-labels", "N", "a classifier's labels (config.json's num_labels); 1 makes it a cross-encoder serving score and rerank"},
	{"sim-mla", "", "an MLA model on FlashMLA: a --block-size not a multiple of 64 becomes 64, as vLLM forces it"},
	{"sim-mamba-page-bytes", "N", "a hybrid model's Mamba page in bytes: the block size grows to hold it (with --sim-attn-page-bytes-per-token)"},
	{"sim-attn-page-bytes-per-token", "N", "one token's attention page in bytes (2 * KV heads * head size * dtype bytes), for --sim-mamba-page-bytes"},
	{"sim-kv-cache-groups", "GROUPS|config", "a hybrid model's KV-cache groups: full, sliding_window:W, mamba, comma separated; config reads config.json"},
}

// Usage writes what `vllm-sim serve -h` prints: the synopsis, then each
// flag with its default, vLLM's flags apart from the simulator's.
func Usage(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, `usage: vllm-sim serve MODEL [flags]
       vllm-sim --version

vllm-sim stands in for `+"`vllm serve`"+` where there are no GPUs: the same command line,
OpenAI API, /metrics and KV-cache events, over a simulated paged KV cache and a
latency model. MODEL (or --model MODEL) is the name clients use unless
--served-model-name is given.

Flags take vLLM's forms: --flag value, --flag=value, underscores for dashes,
--flag and --no-flag for booleans.

vLLM flags, with vLLM's defaults (any other vLLM flag is accepted, logged and ignored):
`)
	d := Defaults()
	writeFlags(tw, vllmHelp, &d)
	fmt.Fprint(tw, "\nsimulator flags:\n")
	writeFlags(tw, simHelp, &d)
	fmt.Fprint(tw, "\n  -h, --help\tshow this help and exit\n")
	fmt.Fprintf(tw, "  -v, --version\tprint the vLLM version followed (%s) and exit\n", Version)
	return tw.Flush()
}

// writeFlags writes one line per flag: its spelling, what it does and the
// value d gives it, where that is one value.
func writeFlags(w io.Writer, list []flagHelp, d *Config) {
	for _, h := range list {
		spelling := "--" + h.name
		if h.arg != "" {
			spelling += " " + h.arg
		}
		text := h.text
		if f := flags[h.name]; f.value != nil {
			if v := fmt.Sprint(f.value(d)); v != "" {
				text += " (default " + v + ")"
			}
		}
		fmt.Fprintf(w, "  %s\t%s\n", spelling, text)
	}
}
