package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
)

// ErrVersion is returned by Parse for --version; the caller prints Version.
var ErrVersion = errors.New("version requested")

// ErrHelp is returned by Parse for -h, --help, -help or a leading `help`
// (`vllm-sim help`, as `vllm help`): the caller prints Usage and exits 0
// without serving.
var ErrHelp = errors.New("help requested")

// Version is what `vllm-sim --version` prints: the vLLM release whose
// serving surface the simulator follows, marked as simulated.
const Version = "0.26.0+sim"

type setter func(c *Config, v string) error

type flag struct {
	set setter
	// value reads the flag's field, so help shows Defaults' value; nil
	// where the default is not one value (help's text says it).
	value   func(c *Config) any
	isBool  bool
	isMulti bool // takes every following argument up to the next flag
}

func intFlag(f func(*Config) *int) flag {
	return flag{value: func(c *Config) any { return *f(c) }, set: func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		*f(c) = n
		return nil
	}}
}

func strFlag(f func(*Config) *string) flag {
	return flag{value: func(c *Config) any { return *f(c) }, set: func(c *Config, v string) error { *f(c) = v; return nil }}
}

func durFlag(f func(*Config) *time.Duration) flag {
	return flag{value: func(c *Config) any { return *f(c) }, set: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration (e.g. 250us, 12ms): %q", v)
		}
		*f(c) = d
		return nil
	}}
}

func boolFlag(f func(*Config) *bool) flag {
	return flag{isBool: true, value: func(c *Config) any { return *f(c) }, set: func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not a boolean: %q", v)
		}
		*f(c) = b
		return nil
	}}
}

// explicit marks --enable-prefix-caching as given, so that the pooling
// default (resolvePrefixCaching) leaves it alone.
func explicit(f flag) flag {
	set := f.set
	f.set = func(c *Config, v string) error {
		c.prefixCachingSet = true
		return set(c, v)
	}
	return f
}

var flags = map[string]flag{
	"host": strFlag(func(c *Config) *string { return &c.Host }),
	"port": intFlag(func(c *Config) *int { return &c.Port }),
	"served-model-name": {set: func(c *Config, v string) error {
		c.ServedModelNames = append(c.ServedModelNames, v)
		return nil
	}},
	"api-key": {isMulti: true, set: func(c *Config, v string) error {
		c.APIKeys = append(c.APIKeys, v)
		return nil
	}},
	"block-size":              intFlag(func(c *Config) *int { return &c.BlockSize }),
	"num-gpu-blocks-override": intFlag(func(c *Config) *int { return &c.NumGPUBlocks }),
	"max-num-seqs":            intFlag(func(c *Config) *int { return &c.MaxNumSeqs }),
	"max-model-len":           intFlag(func(c *Config) *int { return &c.MaxModelLen }),
	"max-num-batched-tokens":  intFlag(func(c *Config) *int { return &c.MaxNumBatchedTokens }),
	"tensor-parallel-size":    intFlag(func(c *Config) *int { return &c.TensorParallelSize }),
	"data-parallel-size":      intFlag(func(c *Config) *int { return &c.DataParallelSize }),
	"data-parallel-rank":      intFlag(func(c *Config) *int { return &c.DataParallelRank }),
	"headless":                boolFlag(func(c *Config) *bool { return &c.Headless }),
	"tokenizer":               strFlag(func(c *Config) *string { return &c.Tokenizer }),
	"seed": {value: func(c *Config) any { return c.Seed }, set: func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		c.Seed = n
		return nil
	}},
	"enable-prefix-caching":        explicit(boolFlag(func(c *Config) *bool { return &c.EnablePrefixCaching })),
	"runner":                       strFlag(func(c *Config) *string { return &c.Runner }),
	"convert":                      strFlag(func(c *Config) *string { return &c.Convert }),
	"pooler-config":                {set: parsePoolerConfig},
	"sim-num-labels":               intFlag(func(c *Config) *int { return &c.NumLabels }),
	"enable-lora":                  boolFlag(func(c *Config) *bool { return &c.EnableLoRA }),
	"enable-prompt-tokens-details": boolFlag(func(c *Config) *bool { return &c.EnablePromptTokensDetails }),
	"lora-modules": {isMulti: true, set: func(c *Config, v string) error {
		m, err := parseLoRAModule(v)
		if err != nil {
			return err
		}
		for _, have := range c.LoRAModules {
			if have.Name == m.Name {
				return fmt.Errorf("adapter %q given twice", m.Name)
			}
		}
		m.ID = len(c.LoRAModules) + 1
		c.LoRAModules = append(c.LoRAModules, m)
		return nil
	}},
	"kv-events-config": {set: func(c *Config, v string) error {
		kv, err := ParseKVEvents(v)
		c.KVEvents = kv
		return err
	}},
	"kv-transfer-config": {set: func(c *Config, v string) error {
		kt, err := kvxfer.ParseConfig(v, kvxfer.NewEngineID)
		c.KVTransfer = kt
		return err
	}},
	"sim-mla":                       boolFlag(func(c *Config) *bool { return &c.Engine.MLA }),
	"sim-mamba-page-bytes":          intFlag(func(c *Config) *int { return &c.Engine.MambaPageBytes }),
	"sim-attn-page-bytes-per-token": intFlag(func(c *Config) *int { return &c.Engine.AttnPageBytesPerToken }),
	"sim-kv-bytes-per-token": {value: func(c *Config) any { return c.KVBytesPerToken }, set: func(c *Config, v string) error {
		if v == KVBytesFromConfig {
			c.kvBytesFromConfig = true
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer or %q: %q", KVBytesFromConfig, v)
		}
		c.KVBytesPerToken, c.kvBytesFromConfig = n, false
		return nil
	}},
	"sim-kv-transfer-bandwidth": {value: func(c *Config) any { return c.KVBandwidth }, set: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number of bytes per second (e.g. 25e9): %q", v)
		}
		c.KVBandwidth = f
		return nil
	}},

	"sim-latency":                  boolFlag(func(c *Config) *bool { return &c.Latency.Enabled }),
	"sim-overhead":                 durFlag(func(c *Config) *time.Duration { return &c.Latency.Overhead }),
	"sim-prefill-per-token":        durFlag(func(c *Config) *time.Duration { return &c.Latency.PrefillPerToken }),
	"sim-cpu-load-per-token":       durFlag(func(c *Config) *time.Duration { return &c.Latency.CPULoadPerToken }),
	"sim-inter-token-latency":      durFlag(func(c *Config) *time.Duration { return &c.Latency.InterToken }),
	"sim-event-format":             strFlag(func(c *Config) *string { return &c.EventFormat }),
	"sim-event-schema":             intFlag(func(c *Config) *int { return &c.EventSchema }),
	"sim-replay-format":            strFlag(func(c *Config) *string { return &c.ReplayFormat }),
	"sim-cpu-offload-blocks":       intFlag(func(c *Config) *int { return &c.CPUOffloadBlocks }),
	"sim-cpu-offload-block-size":   intFlag(func(c *Config) *int { return &c.CPUOffloadBlockSize }),
	"sim-cpu-offload-placeholders": boolFlag(func(c *Config) *bool { return &c.CPUOffloadPlaceholders }),
	"sim-kv-cache-groups":          strFlag(func(c *Config) *string { return &c.KVCacheGroupsFlag }),
	"sim-load-factor": {value: func(c *Config) any { return c.Latency.LoadFactor }, set: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		c.Latency.LoadFactor = f
		return nil
	}},
}

// Parse reads `[serve] MODEL [flags]` in vLLM's syntax: --flag value or
// --flag=value, underscores or dashes, --flag / --no-flag for booleans, and
// the model either positional or as --model. A vLLM flag the simulator does
// not know is kept in Unknown with the value that follows it, if any, so a
// jobspec written for vLLM runs here; an unknown --sim-* flag or
// single-dash flag is an error, since neither can be vLLM's. -h, --help,
// -help or a leading `help` return ErrHelp.
func Parse(args []string) (Config, error) {
	c := Defaults()
	if len(args) > 0 && args[0] == "help" {
		return c, ErrHelp
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		took, err := c.parseArg(args, i)
		if err != nil {
			return c, err
		}
		i += took
	}
	if err := c.resolveKVCacheGroups(); err != nil {
		return c, err
	}
	if err := c.resolveKVBytes(); err != nil {
		return c, err
	}
	if err := c.resolveBlockSize(); err != nil {
		return c, err
	}
	c.resolvePrefixCaching()
	return c, c.Validate()
}

// parseArg reads args[i] and returns how many of the arguments after it
// it took as values.
func (c *Config) parseArg(args []string, i int) (int, error) {
	arg := args[i]
	switch {
	case arg == "--version" || arg == "-v":
		return 0, ErrVersion
	case isHelp(arg):
		return 0, ErrHelp
	case !strings.HasPrefix(arg, "-"):
		if c.Model != "" {
			return 0, fmt.Errorf("unexpected argument %q: the model is already %q", arg, c.Model)
		}
		c.Model = arg
		return 0, nil
	case !strings.HasPrefix(arg, "--"):
		return 0, fmt.Errorf("unknown flag %s: vllm-sim takes vLLM's long flags (--name); `vllm-sim serve -h` lists them", arg)
	}
	name, value, hasValue := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	name = strings.ReplaceAll(name, "_", "-")
	if name == "model" {
		return c.setModel(args, i, value, hasValue)
	}
	f, known := flags[name]
	if !known {
		return c.parseUnknown(args, i, name, hasValue)
	}
	if f.isMulti && !hasValue {
		return c.parseMulti(args, i, name, f)
	}
	took := 0
	if !hasValue {
		switch {
		case f.isBool && (i+1 >= len(args) || !isBoolWord(args[i+1])):
			value = "true"
		case i+1 < len(args):
			took, value = 1, args[i+1]
		default:
			return 0, fmt.Errorf("--%s needs a value", name)
		}
	}
	if err := f.set(c, value); err != nil {
		return 0, fmt.Errorf("--%s: %w", name, err)
	}
	return took, nil
}

// setModel reads --model: its value after = or as the next argument.
func (c *Config) setModel(args []string, i int, value string, hasValue bool) (int, error) {
	if hasValue {
		c.Model = value
		return 0, nil
	}
	if i+1 >= len(args) {
		return 0, fmt.Errorf("--model needs a value")
	}
	c.Model = args[i+1]
	return 1, nil
}

// parseUnknown reads args[i], a flag not in flags: --no-X for a boolean X,
// an error for a --sim-* flag (a typo of the simulator's own), else a vLLM
// flag kept in Unknown with the value after it, if one follows.
func (c *Config) parseUnknown(args []string, i int, name string, hasValue bool) (int, error) {
	if bf, ok := flags[strings.TrimPrefix(name, "no-")]; ok && strings.HasPrefix(name, "no-") && bf.isBool && !hasValue {
		return 0, bf.set(c, "false")
	}
	if strings.HasPrefix(strings.TrimPrefix(name, "no-"), "sim-") {
		return 0, fmt.Errorf("unknown flag --%s: `vllm-sim serve -h` lists the --sim-* flags", name)
	}
	unknown, took := args[i], 0
	if next := i + 1; !hasValue && next < len(args) && !strings.HasPrefix(args[next], "--") && !isHelp(args[next]) {
		unknown += " " + args[next]
		took = 1
	}
	c.Unknown = append(c.Unknown, unknown)
	return took, nil
}

// parseMulti reads a flag taking every argument after it up to the next
// flag, as vLLM's nargs="+".
func (c *Config) parseMulti(args []string, i int, name string, f flag) (int, error) {
	took := 0
	for i+took+1 < len(args) && !strings.HasPrefix(args[i+took+1], "--") {
		took++
		if err := f.set(c, args[i+took]); err != nil {
			return 0, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if took == 0 {
		return 0, fmt.Errorf("--%s needs a value", name)
	}
	return took, nil
}

// isHelp reports whether arg asks for help, in any spelling vLLM's
// argparse or Go's flag package takes.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help"
}

func isBoolWord(s string) bool {
	_, err := strconv.ParseBool(s)
	return err == nil
}
