// Package report turns the client's per-request results into the figures
// llmgw bench publishes, one summary per routing policy: TTFT, inter-token
// latency and end-to-end percentiles, goodput at an SLO, requests the
// engines rejected as invalid apart from those shed for load, the
// cached-token share the engines reported, and that share against the
// offline oracle's bound. It renders them as JSON, as a Markdown section
// for docs/BENCHMARKS.md, and as PNG plots (gonum.org/v1/plot).
//
// It imports cmd/llmgw/internal/bench/client (for Result) and gonum's plot packages
// only.
package report
