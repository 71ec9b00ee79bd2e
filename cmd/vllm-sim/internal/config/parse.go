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

// Version is what `vllm-sim --version` prints: the vLLM release whose
// serving surface the simulator follows, marked as simulated.
const Version = "0.26.0+sim"

type setter func(c *Config, v string) error

type flag struct {
	set     setter
	isBool  bool
	isMulti bool // takes every following argument up to the next flag
}

func intFlag(f func(*Config) *int) flag {
	return flag{set: func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		*f(c) = n
		return nil
	}}
}

func strFlag(f func(*Config) *string) flag {
	return flag{set: func(c *Config, v string) error { *f(c) = v; return nil }}
}

func durFlag(f func(*Config) *time.Duration) flag {
	return flag{set: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("not a duration (e.g. 250us, 12ms): %q", v)
		}
		*f(c) = d
		return nil
	}}
}

func boolFlag(f func(*Config) *bool) flag {
	return flag{isBool: true, set: func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not a boolean: %q", v)
		}
		*f(c) = b
		return nil
	}}
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
	"seed": {set: func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		c.Seed = n
		return nil
	}},
	"enable-prefix-caching": boolFlag(func(c *Config) *bool { return &c.EnablePrefixCaching }),
	"enable-lora":           boolFlag(func(c *Config) *bool { return &c.EnableLoRA }),
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
	"sim-kv-bytes-per-token": {set: func(c *Config, v string) error {
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
	"sim-kv-transfer-bandwidth": {set: func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number of bytes per second (e.g. 25e9): %q", v)
		}
		c.KVBandwidth = f
		return nil
	}},

	"sim-latency":             boolFlag(func(c *Config) *bool { return &c.Latency.Enabled }),
	"sim-overhead":            durFlag(func(c *Config) *time.Duration { return &c.Latency.Overhead }),
	"sim-prefill-per-token":   durFlag(func(c *Config) *time.Duration { return &c.Latency.PrefillPerToken }),
	"sim-cpu-load-per-token":  durFlag(func(c *Config) *time.Duration { return &c.Latency.CPULoadPerToken }),
	"sim-inter-token-latency": durFlag(func(c *Config) *time.Duration { return &c.Latency.InterToken }),
	"sim-event-format":        strFlag(func(c *Config) *string { return &c.EventFormat }),
	"sim-event-schema":        intFlag(func(c *Config) *int { return &c.EventSchema }),
	"sim-replay-format":       strFlag(func(c *Config) *string { return &c.ReplayFormat }),
	"sim-cpu-offload-blocks":  intFlag(func(c *Config) *int { return &c.CPUOffloadBlocks }),
	"sim-kv-cache-groups":     strFlag(func(c *Config) *string { return &c.KVCacheGroupsFlag }),
	"sim-load-factor": {set: func(c *Config, v string) error {
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
// the model either positional or as --model. A flag the simulator does not
// know is kept in Unknown with the value that follows it, if any.
func Parse(args []string) (Config, error) {
	c := Defaults()
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--version" || arg == "-v" {
			return c, ErrVersion
		}
		if !strings.HasPrefix(arg, "--") {
			if c.Model != "" {
				return c, fmt.Errorf("unexpected argument %q: the model is already %q", arg, c.Model)
			}
			c.Model = arg
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		if name == "model" {
			if !hasValue {
				if i+1 >= len(args) {
					return c, fmt.Errorf("--model needs a value")
				}
				i++
				value = args[i]
			}
			c.Model = value
			continue
		}
		f, known := flags[name]
		if !known && strings.HasPrefix(name, "no-") {
			if bf, ok := flags[strings.TrimPrefix(name, "no-")]; ok && bf.isBool && !hasValue {
				if err := bf.set(&c, "false"); err != nil {
					return c, err
				}
				continue
			}
		}
		if !known {
			unknown := arg
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
				unknown += " " + args[i]
			}
			c.Unknown = append(c.Unknown, unknown)
			continue
		}
		if f.isMulti && !hasValue {
			n := 0
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				i++
				n++
				if err := f.set(&c, args[i]); err != nil {
					return c, fmt.Errorf("--%s: %w", name, err)
				}
			}
			if n == 0 {
				return c, fmt.Errorf("--%s needs a value", name)
			}
			continue
		}
		if !hasValue {
			switch {
			case f.isBool && (i+1 >= len(args) || !isBoolWord(args[i+1])):
				value = "true"
			case i+1 < len(args):
				i++
				value = args[i]
			default:
				return c, fmt.Errorf("--%s needs a value", name)
			}
		}
		if err := f.set(&c, value); err != nil {
			return c, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if err := c.resolveKVCacheGroups(); err != nil {
		return c, err
	}
	if err := c.resolveKVBytes(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func isBoolWord(s string) bool {
	_, err := strconv.ParseBool(s)
	return err == nil
}
