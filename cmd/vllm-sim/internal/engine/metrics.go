package engine

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are vLLM's Prometheus series, with vLLM's names and labels
// (model_name, engine), so that anything scraping vLLM scrapes the simulator.
// Counters carry the _total suffix Python's client writes in the text format.
type Metrics struct {
	running, waiting, usage prometheus.Gauge
	queries, hits           prometheus.Counter
	promptTokens, genTokens prometheus.Counter
	preemptions             prometheus.Counter
	success                 *prometheus.CounterVec
	ttft, itl, e2e, queue   prometheus.Observer
}

// Buckets as vLLM declares them (seconds).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// Family is the set of metric vectors shared by all engines of a process;
// each engine takes its labelled children with For.
type Family struct {
	running, waiting, usage *prometheus.GaugeVec
	queries, hits           *prometheus.CounterVec
	promptTokens, genTokens *prometheus.CounterVec
	preemptions             *prometheus.CounterVec
	success                 *prometheus.CounterVec
	ttft, itl, e2e, queue   *prometheus.HistogramVec
	cacheInfo               *prometheus.GaugeVec
}

var labels = []string{"model_name", "engine"}

// NewFamily registers vLLM's series on reg.
func NewFamily(reg prometheus.Registerer) *Family {
	g := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	c := func(name, help string, extra ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, labels...), extra...))
		reg.MustRegister(v)
		return v
	}
	h := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v
	}
	f := &Family{
		running:      g("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:      g("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		usage:        g("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		queries:      c("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
		hits:         c("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
		promptTokens: c("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:    c("vllm:generation_tokens_total", "Number of generation tokens processed."),
		preemptions:  c("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine."),
		success:      c("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason"),
		ttft:         h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:          h("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		e2e:          h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2eBuckets),
		queue:        h("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e2eBuckets),
	}
	f.cacheInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig"},
		[]string{"block_size", "num_gpu_blocks", "num_cpu_blocks", "enable_prefix_caching", "cache_dtype", "engine"})
	reg.MustRegister(f.cacheInfo)
	return f
}

// For returns the metrics of one engine. Its cache_config_info advertises
// gpuBlocks and num_cpu_blocks "None", whatever the CPU tier: a V1 engine
// never sets CacheConfig.num_cpu_blocks (vllm-project/vllm 00080ee1,
// vllm/v1/engine/core.py; older V1 releases set it to 0), and the label is
// str() of the field. The OffloadingConnector's CPU buffer, which the sim's
// CPU tier plays, is sized in the connector's configuration and appears in
// no metric in blocks.
func (f *Family) For(model string, rank, blockSize, gpuBlocks int) *Metrics {
	l := prometheus.Labels{"model_name": model, "engine": strconv.Itoa(rank)}
	f.cacheInfo.With(prometheus.Labels{
		"block_size": strconv.Itoa(blockSize), "num_gpu_blocks": strconv.Itoa(gpuBlocks),
		"num_cpu_blocks": "None", "enable_prefix_caching": "True", "cache_dtype": "auto",
		"engine": strconv.Itoa(rank),
	}).Set(1)
	return &Metrics{
		running: f.running.With(l), waiting: f.waiting.With(l), usage: f.usage.With(l),
		queries: f.queries.With(l), hits: f.hits.With(l),
		promptTokens: f.promptTokens.With(l), genTokens: f.genTokens.With(l),
		preemptions: f.preemptions.With(l),
		success:     f.success.MustCurryWith(l),
		ttft:        f.ttft.With(l), itl: f.itl.With(l), e2e: f.e2e.With(l), queue: f.queue.With(l),
	}
}

func (m *Metrics) setLoad(running, waiting int, usage float64) {
	m.running.Set(float64(running))
	m.waiting.Set(float64(waiting))
	m.usage.Set(usage)
}

func (m *Metrics) admitted(promptTokens, cached int, queued time.Duration) {
	m.queries.Add(float64(promptTokens))
	m.hits.Add(float64(cached))
	m.promptTokens.Add(float64(promptTokens))
	m.queue.Observe(queued.Seconds())
}

func (m *Metrics) preempted()                    { m.preemptions.Inc() }
func (m *Metrics) firstToken(ttft time.Duration) { m.ttft.Observe(ttft.Seconds()); m.genTokens.Inc() }
func (m *Metrics) interToken(d time.Duration)    { m.itl.Observe(d.Seconds()); m.genTokens.Inc() }

func (m *Metrics) finished(reason string, e2e time.Duration, _, _ int) {
	m.success.WithLabelValues(reason).Inc()
	m.e2e.Observe(e2e.Seconds())
}
