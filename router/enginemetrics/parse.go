// Package enginemetrics scrapes the load signals the scheduler needs from
// each replica's Prometheus endpoint (vLLM's /metrics): requests waiting and
// running, KV-cache usage, and the KV capacity vLLM advertises (plus the
// prefix cache's hit counters, for the status page); and, from
// the replica's model listing (/v1/models), the LoRA adapters it serves.
//
// It owns the scrape loop, which spreads each round's scrapes over the
// round and caps them per second (Options.MaxRate) so that their CPU stays
// bounded at any fleet size, and a small parser of the Prometheus text format
// that reads only the series it needs. It must not import driver/... or
// other router packages; results go to a Sink (router/load's Tracker).
package enginemetrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// vLLM's series names.
const (
	metricWaiting  = "vllm:num_requests_waiting"
	metricRunning  = "vllm:num_requests_running"
	metricKVUsage  = "vllm:kv_cache_usage_perc"
	metricKVUsage0 = "vllm:gpu_cache_usage_perc" // before vLLM 0.10
	metricCache    = "vllm:cache_config_info"
	// The prefix cache's counters, in tokens (vLLM v1); only the status
	// page reads them, beside the router's own prediction.
	metricPrefixQueries = "vllm:prefix_cache_queries_total"
	metricPrefixHits    = "vllm:prefix_cache_hits_total"
)

// maxLine bounds one exposition line; longer ones are an error.
const maxLine = 64 << 10

// Sample is one scrape of a replica, summed over its engines (data-parallel
// ranks): queue lengths add up, KV usage is the highest engine's, capacity
// adds up.
type Sample struct {
	Waiting, Running float64
	KVUsage          float64 // 0..1
	// GPUBlocks and CPUBlocks are the KV capacity from vllm:cache_config_info
	// (0 when not exported).
	GPUBlocks, CPUBlocks int
	// BlockSize is the engine's tokens per block (0 when not exported).
	BlockSize int
	// PrefixQueries and PrefixHits are the engine's prefix-cache counters
	// (tokens queried, tokens found cached), meaningful only when
	// PrefixKnown (the engine exports them).
	PrefixQueries, PrefixHits float64
	PrefixKnown               bool
	// Adapters are the LoRA adapters the replica lists in its /v1/models,
	// sorted; meaningful only when AdaptersKnown (the target has a
	// ModelsURL and the listing was read).
	Adapters      []string
	AdaptersKnown bool
}

// Parse reads a Prometheus text exposition and extracts the Sample. Series
// it does not need are skipped; a malformed line of a needed series, or a
// stream with none of the load series, is an error.
func Parse(r io.Reader) (Sample, error) {
	var s Sample
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Bytes()
		if !mayBeNeeded(raw) {
			continue
		}
		line := strings.TrimSpace(string(raw))
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := splitName(line)
		switch name {
		case metricWaiting, metricRunning, metricKVUsage, metricKVUsage0, metricCache, metricPrefixQueries, metricPrefixHits:
		default:
			continue
		}
		labels, valText, err := splitLabels(rest)
		if err != nil {
			return Sample{}, fmt.Errorf("line %d (%s): %w", n, name, err)
		}
		v, err := parseValue(valText)
		if err != nil {
			return Sample{}, fmt.Errorf("line %d (%s): %w", n, name, err)
		}
		switch name {
		case metricPrefixQueries:
			s.PrefixQueries, s.PrefixKnown = s.PrefixQueries+v, true
			continue // not a load series
		case metricPrefixHits:
			s.PrefixHits, s.PrefixKnown = s.PrefixHits+v, true
			continue
		}
		found = true
		switch name {
		case metricWaiting:
			s.Waiting += v
		case metricRunning:
			s.Running += v
		case metricKVUsage, metricKVUsage0:
			s.KVUsage = max(s.KVUsage, min(max(v, 0), 1))
		case metricCache:
			s.GPUBlocks += atoiLabel(labels, "num_gpu_blocks")
			s.CPUBlocks += atoiLabel(labels, "num_cpu_blocks")
			if bs := atoiLabel(labels, "block_size"); bs > 0 {
				s.BlockSize = bs
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Sample{}, fmt.Errorf("read metrics: %w", err)
	}
	if !found {
		return Sample{}, errors.New("no vLLM load series (vllm:num_requests_waiting and friends) in the exposition")
	}
	return s, nil
}

// needed are the series Parse reads.
var needed = [...][]byte{
	[]byte(metricWaiting), []byte(metricRunning), []byte(metricKVUsage), []byte(metricKVUsage0), []byte(metricCache),
	[]byte(metricPrefixQueries), []byte(metricPrefixHits),
}

// mayBeNeeded says whether a line, leading blanks aside, starts with a
// needed series' name: a vLLM exposition has hundreds of histogram lines
// and seven that matter, and this looks at a few bytes of each instead of
// copying and splitting it.
func mayBeNeeded(line []byte) bool {
	line = bytes.TrimLeftFunc(line, unicode.IsSpace)
	for _, name := range needed {
		if bytes.HasPrefix(line, name) {
			return true
		}
	}
	return false
}

// splitName returns the metric name and what follows it.
func splitName(line string) (string, string) {
	i := strings.IndexAny(line, "{ \t")
	if i < 0 {
		return line, ""
	}
	return line[:i], line[i:]
}

// splitLabels parses an optional {k="v",...} block, returning the labels and
// the rest of the line (value and optional timestamp).
func splitLabels(rest string) (map[string]string, string, error) {
	rest = strings.TrimLeft(rest, " \t")
	if !strings.HasPrefix(rest, "{") {
		return nil, rest, nil
	}
	labels := map[string]string{}
	i := 1
	for {
		for i < len(rest) && (rest[i] == ' ' || rest[i] == ',') {
			i++
		}
		if i >= len(rest) {
			return nil, "", errors.New("unterminated label set")
		}
		if rest[i] == '}' {
			return labels, rest[i+1:], nil
		}
		eq := strings.IndexByte(rest[i:], '=')
		if eq <= 0 {
			return nil, "", errors.New("label without '='")
		}
		key := strings.TrimSpace(rest[i : i+eq])
		i += eq + 1
		if i >= len(rest) || rest[i] != '"' {
			return nil, "", fmt.Errorf("label %q: value is not quoted", key)
		}
		i++
		var b strings.Builder
		for {
			if i >= len(rest) {
				return nil, "", fmt.Errorf("label %q: unterminated value", key)
			}
			c := rest[i]
			i++
			if c == '"' {
				break
			}
			if c == '\\' && i < len(rest) {
				switch rest[i] {
				case 'n':
					c = '\n'
				default:
					c = rest[i]
				}
				i++
			}
			b.WriteByte(c)
		}
		labels[key] = b.String()
	}
}

// parseValue reads the sample value, ignoring an optional timestamp.
func parseValue(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return 0, fmt.Errorf("want a value and an optional timestamp, got %q", s)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("value %q: %w", f[0], err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("value %q is not finite", f[0])
	}
	return v, nil
}

func atoiLabel(labels map[string]string, key string) int {
	n, err := strconv.Atoi(labels[key])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
