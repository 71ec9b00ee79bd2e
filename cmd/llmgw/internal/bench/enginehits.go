package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// engineHitsMetric is vLLM's counter of prompt tokens served from the
// prefix cache; every request counts, whatever its answer's usage says.
const engineHitsMetric = "vllm:prefix_cache_hits_total"

// engineHits sums engineHitsMetric over every engine's /metrics (every
// label set: one per data-parallel rank).
func engineHits(ctx context.Context, hc *http.Client, engines []string) (float64, error) {
	n, err := sumCounter(ctx, hc, engines, engineHitsMetric, "")
	if err != nil {
		return 0, fmt.Errorf("engine metrics: %w", err)
	}
	return n, nil
}

// sumCounter sums one counter over the /metrics pages of every base URL,
// with label as scrapeCounter takes it.
func sumCounter(ctx context.Context, hc *http.Client, bases []string, name, label string) (float64, error) {
	total := 0.0
	for _, u := range bases {
		n, err := scrapeCounter(ctx, hc, u+"/metrics", name, label)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// scrapeCounter sums the samples of one metric in a Prometheus text page:
// every label set, or with label (such as `result="ok"`) only the sets
// holding it.
func scrapeCounter(ctx context.Context, hc *http.Client, url, name, label string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		end := strings.LastIndexByte(rest, '}')
		if label != "" && !strings.Contains(rest[:end+1], label) {
			continue
		}
		f := strings.Fields(rest[end+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %w", url, name, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	return sum, nil
}
