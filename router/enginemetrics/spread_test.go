package enginemetrics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// vllmBody is an exposition shaped like one vLLM engine's /metrics: the
// load series among some 600 lines of histograms and counters (about
// 60 kB), as a real scrape reads.
func vllmBody() string {
	var b strings.Builder
	labels := `engine="0",model_name="Qwen/Qwen3-8B"`
	for _, h := range []string{"time_to_first_token_seconds", "e2e_request_latency_seconds", "request_queue_time_seconds",
		"request_inference_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds", "inter_token_latency_seconds",
		"request_prompt_tokens", "request_generation_tokens", "iteration_tokens_total", "request_params_n",
		"request_params_max_tokens", "request_max_num_generation_tokens", "time_per_output_token_seconds"} {
		fmt.Fprintf(&b, "# HELP vllm:%s Histogram of %s.\n# TYPE vllm:%s histogram\n", h, h, h)
		for i := range 36 {
			fmt.Fprintf(&b, "vllm:%s_bucket{%s,le=\"%g\"} %d\n", h, labels, 0.001*float64(int(1)<<min(i, 30)), 1000+i*37)
		}
		fmt.Fprintf(&b, "vllm:%s_bucket{%s,le=\"+Inf\"} 2332\nvllm:%s_count{%s} 2332\nvllm:%s_sum{%s} 4711.5\n", h, labels, h, labels, h, labels)
	}
	for _, c := range []string{"prompt_tokens_total", "generation_tokens_total", "num_preemptions_total", "prefix_cache_queries_total", "prefix_cache_hits_total"} {
		fmt.Fprintf(&b, "# TYPE vllm:%s counter\nvllm:%s{%s} 123456\n", c, c, labels)
	}
	fmt.Fprintf(&b, "vllm:num_requests_waiting{%s} 3\nvllm:num_requests_running{%s} 12\nvllm:kv_cache_usage_perc{%s} 0.42\n", labels, labels, labels)
	b.WriteString(`vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_cpu_blocks="0",num_gpu_blocks="27000"} 1` + "\n")
	return b.String()
}

// fleet serves n replicas' /metrics and /v1/models from one real HTTP
// server, counting each replica's scrapes and the most in flight at once.
type fleet struct {
	srv            *httptest.Server
	n              int
	scrapes        []atomic.Int64
	inFlight, most atomic.Int64
}

func newFleet(tb testing.TB, n int) *fleet {
	tb.Helper()
	body := vllmBody()
	f := &fleet{n: n, scrapes: make([]atomic.Int64, n)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /r/{i}/metrics", func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscan(r.PathValue("i"), &i); err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		now := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for m := f.most.Load(); now > m && !f.most.CompareAndSwap(m, now); m = f.most.Load() {
		}
		f.scrapes[i].Add(1)
		_, _ = w.Write([]byte(body))
	})
	mux.HandleFunc("GET /r/{i}/v1/models", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B","parent":null}]}`))
	})
	f.srv = httptest.NewServer(mux)
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fleet) targets() []Target {
	out := make([]Target, f.n)
	for i := range out {
		base := fmt.Sprintf("%s/r/%d", f.srv.URL, i)
		out[i] = Target{ID: fmt.Sprint("replica-", i), URL: base + "/metrics", ModelsURL: base + "/v1/models"}
	}
	return out
}

func (f *fleet) total() (sum, least, most int64) {
	least = -1
	for i := range f.scrapes {
		c := f.scrapes[i].Load()
		sum += c
		if least < 0 || c < least {
			least = c
		}
		most = max(most, c)
	}
	return sum, least, most
}

type countSink struct{ n atomic.Int64 }

func (c *countSink) Scraped(string, Sample) { c.n.Add(1) }

// TestScraperKeepsToItsRate: 200 replicas behind real HTTP endpoints,
// an interval of 10 ms and a cap of 200 scrapes a second: rounds last
// 1 s, every replica is read once a round (no replica twice more than
// another), no more than MaxConcurrent at once, and no more scrapes than
// the cap allows in the time that passed. Counts, not speed: a slow
// machine only scrapes less. (The timeout is long, so every scrape of a
// round reaches its replica however slow the machine.)
func TestScraperKeepsToItsRate(t *testing.T) {
	t.Parallel()
	const n, rate, conc = 200, 200, 4
	f := newFleet(t, n)
	tgs := f.targets()
	var sink countSink
	start := time.Now()
	s, err := Start(context.Background(), func() []Target { return tgs }, &sink, Options{
		Interval: 10 * time.Millisecond, Timeout: time.Minute, MaxRate: rate, MaxConcurrent: conc, Client: f.srv.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "every replica to be scraped twice", func() bool { _, least, _ := f.total(); return least >= 2 })
	s.Close()
	elapsed := time.Since(start)
	sum, least, most := f.total()
	if most > least+1 {
		t.Errorf("replicas were scraped %d to %d times; a round reads each once", least, most)
	}
	if allowed := int64(elapsed.Seconds()*rate) + n; sum > allowed {
		t.Errorf("%d scrapes in %s; the cap of %d/s allows %d (a round's %d included)", sum, elapsed, rate, allowed, n)
	}
	if m := f.most.Load(); m > conc {
		t.Errorf("%d scrapes in flight at once; MaxConcurrent is %d", m, conc)
	}
	if sink.n.Load() == 0 {
		t.Error("no sample reached the sink")
	}
	t.Logf("%d scrapes of %d replicas in %s, at most %d at once", sum, n, elapsed, f.most.Load())
}

func TestRoundLength(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		interval time.Duration
		rate, n  int
		want     time.Duration
	}{
		{time.Second, 250, 100, time.Second},
		{time.Second, 250, 250, time.Second},
		{time.Second, 250, 1000, 4 * time.Second},
		{time.Second, 250, 4096, 16384 * time.Millisecond},
		{time.Second, -1, 4096, time.Second},
		{time.Second, 250, 0, time.Second},
	} {
		if got := RoundLength(tt.interval, tt.rate, tt.n); got != tt.want {
			t.Errorf("RoundLength(%s, %d, %d) = %s; want %s", tt.interval, tt.rate, tt.n, got, tt.want)
		}
	}
}

// BenchmarkScrapeFleet scrapes 1,000 replicas (a vLLM-sized /metrics and
// a model listing each, from one real HTTP server in this process) for
// a few seconds, before (every replica every second, all at once) and
// after (the default cap and concurrency), and reports the process's CPU
// per scrape and per second. Run it with -benchtime=1x.
func BenchmarkScrapeFleet(b *testing.B) {
	for _, c := range []struct {
		name       string
		rate, conc int
		window     time.Duration
	}{
		{"before=all-every-1s", -1, -1, 4 * time.Second},
		{"after=defaults", 0, 0, 8 * time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			const n = 1000
			f := newFleet(b, n)
			tgs := f.targets()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
			defer client.CloseIdleConnections()
			var cpu time.Duration
			var scrapes int64
			var wall time.Duration
			for range b.N {
				sum0, _, _ := f.total()
				c0, t0 := cpuTime(), time.Now()
				s, err := Start(context.Background(), func() []Target { return tgs }, &countSink{}, Options{MaxRate: c.rate, MaxConcurrent: c.conc, Client: client})
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(c.window)
				s.Close()
				sum1, _, _ := f.total()
				cpu, wall, scrapes = cpu+cpuTime()-c0, wall+time.Since(t0), scrapes+sum1-sum0
			}
			b.ReportMetric(float64(scrapes)/wall.Seconds(), "scrapes/s")
			b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "%core")
			if scrapes > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(scrapes), "cpu-µs/scrape")
			}
		})
	}
}

// BenchmarkParse is the parser alone on one vLLM-sized exposition, and
// the parser before it skipped lines by their first bytes.
func BenchmarkParse(b *testing.B) {
	body := vllmBody()
	for _, p := range []struct {
		name  string
		parse func(io.Reader) (Sample, error)
	}{{"before", parseBefore}, {"after", Parse}} {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if s, err := p.parse(strings.NewReader(body)); err != nil || s.Waiting != 3 {
					b.Fatal(s, err)
				}
			}
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parseBefore is Parse as it was before it skipped unneeded lines by
// their first bytes: each line copied, trimmed and split. Kept for
// BenchmarkParse's comparison in one run.
func parseBefore(r io.Reader) (Sample, error) {
	var s Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := splitName(line)
		switch name {
		case metricWaiting, metricRunning, metricKVUsage, metricKVUsage0, metricCache:
		default:
			continue
		}
		_, valText, err := splitLabels(rest)
		if err != nil {
			return Sample{}, err
		}
		v, err := parseValue(valText)
		if err != nil {
			return Sample{}, err
		}
		if name == metricWaiting {
			s.Waiting += v
		}
	}
	return s, sc.Err()
}
