package report

import (
	"slices"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

// SLO is the service level a request must meet to count as goodput: its
// first token within TTFT and its mean inter-token gap within ITL.
type SLO struct {
	TTFT time.Duration `json:"ttft_ns"`
	ITL  time.Duration `json:"itl_ns"`
}

// Millis is a duration in milliseconds, as the reports show them.
type Millis float64

func ms(d time.Duration) Millis { return Millis(float64(d) / float64(time.Millisecond)) }

// Percentiles of one latency.
type Percentiles struct {
	P50 Millis `json:"p50_ms"`
	// P90 is absent from reports written before the sweeps' capacity
	// table showed it (0 when such a report is read).
	P90 Millis `json:"p90_ms,omitempty"`
	P99 Millis `json:"p99_ms"`
}

// Summary is one policy's outcome.
type Summary struct {
	Policy   string        `json:"policy"`
	Duration time.Duration `json:"duration_ns"`
	Requests int           `json:"requests"`
	OK       int           `json:"ok"`
	// Rejected were refused as invalid (a 4xx other than 429, such as the
	// engine's 400 for a prompt over max_model_len), whatever the policy;
	// Shed failed otherwise before any byte of their answer, after every
	// retry (load, or no replica answering); Interrupted failed while
	// their answer streamed.
	Rejected    int         `json:"rejected"`
	Shed        int         `json:"shed"`
	Interrupted int         `json:"interrupted"`
	TTFT        Percentiles `json:"ttft_ns"`
	ITL         Percentiles `json:"itl_ns"`
	E2E         Percentiles `json:"e2e"`
	// Goodput is requests per second that met the SLO; GoodputShare the
	// share of all requests that did.
	Goodput      float64 `json:"goodput_rps"`
	GoodputShare float64 `json:"goodput_share"`
	// PromptTokens and CachedTokens are the engines' usage over completed
	// requests; CachedShare is their ratio.
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`
	CachedShare  float64 `json:"cached_share"`
	// CachedFrom is where CachedTokens come from: "usage" when some
	// answer carried prompt_tokens_details, else "engine_counters" (the
	// engines' vllm:prefix_cache_hits over the run, UseEngineHits), or ""
	// when neither was read.
	CachedFrom string `json:"cached_from,omitempty"`
	// PredictedExact counts the completed requests whose router-predicted
	// cached tokens (client.Result.PredictedCachedTokens, the router's
	// X-Llmgw-Cached-Tokens) equal the cached tokens the engine reported
	// in that request's usage; PredictedExactShare is their share of the
	// completed requests. Both stay 0 unless CachedFrom is "usage": the
	// engines' counters say nothing per request. On data-parallel
	// replicas this is what rank pinning buys: the engine serves a
	// request from the rank the router counted on.
	PredictedExact      int     `json:"predicted_equals_reported"`
	PredictedExactShare float64 `json:"predicted_equals_reported_share"`
	// OracleTokens is the oracle's reusable total over the same completed
	// requests; OracleHitShare is CachedTokens / OracleTokens.
	OracleTokens   int     `json:"oracle_tokens"`
	OracleHitShare float64 `json:"oracle_hit_share"`
	// BusiestShare is the share of completed requests served by the
	// replica that served the most (1/shards is an even spread), from the
	// router's X-Llmgw-Replica header (cmd/llmgw/internal/fleet's routers run with
	// expose_route_headers; a default router sends none).
	BusiestShare float64 `json:"busiest_replica_share"`
	// Copies counts the prompts the routers sent to idle replicas to
	// copy a hot shared prefix there, answered by the time the run's last
	// request ended (the routers' llmgw_prefix_warms_total{result="ok"}
	// then): load the client did not send, which the policy chose to
	// add. Nil where it was not read: reports from before the count, or
	// routers whose metrics did not answer.
	Copies *int `json:"prefix_copies,omitempty"`
	// SendLag is how late the client sent the open-loop requests against
	// the workload's schedule (SendLag; set by the caller, which knows the
	// schedule): a host that limits the rate shows here first.
	SendLag Percentiles `json:"send_lag"`

	ttfts []time.Duration // sorted, for the CDF plot
}

// Summarize condenses one policy's run. reusable[i] is the oracle's bound
// for results[i]; duration is the run's wall-clock length.
func Summarize(policy string, results []client.Result, reusable []int, slo SLO, duration time.Duration) Summary {
	s := Summary{Policy: policy, Duration: duration, Requests: len(results)}
	var ttft, itl, e2e []time.Duration
	good := 0
	perReplica := map[string]int{}
	for i, r := range results {
		switch {
		case r.OK():
		case r.Started:
			s.Interrupted++
			continue
		case r.Rejected():
			s.Rejected++
			continue
		default:
			s.Shed++
			continue
		}
		s.OK++
		perReplica[r.Replica]++
		ttft = append(ttft, r.TTFT)
		e2e = append(e2e, r.E2E)
		itl = append(itl, r.ITL...)
		s.PromptTokens += r.PromptTokens
		s.CachedTokens += r.CachedTokens
		if r.CachedReported {
			s.CachedFrom = "usage"
		}
		if r.PredictedCachedTokens == r.CachedTokens {
			s.PredictedExact++
		}
		if i < len(reusable) {
			s.OracleTokens += reusable[i]
		}
		if r.TTFT <= slo.TTFT && meanGap(r.ITL) <= slo.ITL {
			good++
		}
	}
	s.TTFT, s.ITL, s.E2E = percentiles(ttft), percentiles(itl), percentiles(e2e)
	s.ttfts = ttft
	if duration > 0 {
		s.Goodput = float64(good) / duration.Seconds()
	}
	s.GoodputShare = ratio(good, s.Requests)
	s.CachedShare = ratio(s.CachedTokens, s.PromptTokens)
	s.OracleHitShare = ratio(s.CachedTokens, s.OracleTokens)
	if s.CachedFrom != "usage" {
		s.PredictedExact = 0
	}
	s.PredictedExactShare = ratio(s.PredictedExact, s.OK)
	busiest := 0
	for _, n := range perReplica {
		busiest = max(busiest, n)
	}
	s.BusiestShare = ratio(busiest, s.OK)
	return s
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func meanGap(gaps []time.Duration) time.Duration {
	if len(gaps) == 0 {
		return 0
	}
	var sum time.Duration
	for _, g := range gaps {
		sum += g
	}
	return sum / time.Duration(len(gaps))
}

// percentiles uses the nearest-rank method; it sorts ds.
func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	slices.Sort(ds)
	return Percentiles{P50: ms(rank(ds, 0.50)), P90: ms(rank(ds, 0.90)), P99: ms(rank(ds, 0.99))}
}

func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// UseEngineHits takes the cached tokens from the engines' prefix-cache
// hit counters, grown by hits over the run, when no answer reported its
// own (CachedFrom not "usage"): a fleet whose engines run without
// --enable-prompt-tokens-details still shows its hits. The counters also
// count requests that did not complete, so the shares are upper bounds
// then.
func (s *Summary) UseEngineHits(hits float64) {
	if s.CachedFrom == "usage" {
		return
	}
	s.CachedTokens, s.CachedFrom = int(hits), "engine_counters"
	s.CachedShare = ratio(s.CachedTokens, s.PromptTokens)
	s.OracleHitShare = ratio(s.CachedTokens, s.OracleTokens)
}
