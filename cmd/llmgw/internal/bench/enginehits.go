package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// engineHitsMetric is vLLM's counter of prompt tokens served from the
// prefix cache; every request counts, whatever its answer's usage says.
const engineHitsMetric = "vllm:prefix_cache_hits_total"

// engineHits sums engineHitsMetric over every engine's /metrics (every
// label set: one per data-parallel rank).
func engineHits(ctx context.Context, hc *http.Client, engines []string) (float64, error) {
	n, err := sumCounter(ctx, hc, engines, engineHitsMetric, labelPair{})
	if err != nil {
		return 0, fmt.Errorf("engine metrics: %w", err)
	}
	return n, nil
}

// A labelPair selects the samples whose label name has value; the zero
// labelPair selects every sample.
type labelPair struct{ name, value string }

// sumCounter sums one counter over the /metrics pages of every base URL,
// the samples want selects.
func sumCounter(ctx context.Context, hc *http.Client, bases []string, name string, want labelPair) (float64, error) {
	total := 0.0
	for _, u := range bases {
		n, err := scrapeCounter(ctx, hc, u+"/metrics", name, want)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// maxPage bounds one metrics page: a vLLM engine's is tens of kilobytes.
const maxPage = 16 << 20

// scrapeCounter sums the samples of one metric in a Prometheus text page
// that want selects, parsed by the Prometheus project's own parser so that
// a label is matched by name and value, never by a substring of the set.
func scrapeCounter(ctx context.Context, hc *http.Client, url, name string, want labelPair) (float64, error) {
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
	page, err := io.ReadAll(io.LimitReader(resp.Body, maxPage+1))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	if len(page) > maxPage {
		// Cut short, the page would parse and count too little.
		return 0, fmt.Errorf("%s: page over %d bytes", url, maxPage)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	sum := 0.0
	for _, m := range families[name].GetMetric() {
		if want != (labelPair{}) && !hasLabel(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		default:
			return 0, fmt.Errorf("%s: %s is not a counter", url, name)
		}
	}
	return sum, nil
}

// hasLabel says whether m carries want's label with want's value.
func hasLabel(m *dto.Metric, want labelPair) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == want.name {
			return l.GetValue() == want.value
		}
	}
	return false
}
