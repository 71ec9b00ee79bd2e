// Package report turns the client's per-request results into the figures
// llmgw bench publishes, one summary per routing policy: TTFT, inter-token
// latency and end-to-end percentiles, goodput at an SLO, requests the
// engines rejected as invalid apart from those shed for load, the
// cached-token share the engines reported, and that share against the
// offline oracle's bound. A rate sweep (Sweep) holds one report per rate
// and, run more than once, its repeats, which it reports on their medians
// with ranges (repeats.go): a comparison whose ratios range over 1 is a
// tie. It renders them as JSON, as Markdown (a sweep's whole sweep.md, and
// a shorter section for docs/BENCHMARKS.md), and as PNG plots
// (gonum.org/v1/plot).
//
// It imports cmd/llmgw/internal/bench/client (for Result) and gonum's plot packages
// only.
package report
