package enginemetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestParse reads the load series out of vLLM's /metrics, in the forms
// vLLM versions write them.
func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want Sample
	}{
		{
			name: "two engines",
			in: `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen"} 3.0
vllm:num_requests_waiting{engine="1",model_name="qwen"} 2.0
vllm:num_requests_running{engine="0",model_name="qwen"} 8
vllm:num_requests_running{engine="1",model_name="qwen"} 7
vllm:kv_cache_usage_perc{engine="0",model_name="qwen"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="qwen"} 0.5
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",num_cpu_blocks="100",num_gpu_blocks="2000"} 1.0
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="1",num_cpu_blocks="100",num_gpu_blocks="2000"} 1.0
vllm:prompt_tokens_total{engine="0",model_name="qwen"} 12345
`,
			want: Sample{Waiting: 5, Running: 15, KVUsage: 0.5, GPUBlocks: 4000, CPUBlocks: 200, BlockSize: 16},
		},
		{
			// vLLM's V1 engine leaves CacheConfig.num_cpu_blocks None
			// (KV offloading included: its buffer is the connector's),
			// and every other CacheConfig field is a label too.
			name: "V1 engine with CPU offloading: num_cpu_blocks None",
			in: `vllm:num_requests_running{engine="0",model_name="qwen"} 1
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",kv_offloading_backend="native",kv_offloading_size="64.0",num_cpu_blocks="None",num_gpu_blocks="27000"} 1.0
`,
			want: Sample{Running: 1, GPUBlocks: 27000, BlockSize: 16},
		},
		{
			name: "older vLLM name, no labels, timestamp",
			in:   "vllm:gpu_cache_usage_perc 0.75 1700000000000\nvllm:num_requests_running 1\n",
			want: Sample{Running: 1, KVUsage: 0.75},
		},
		{
			name: "escaped quotes and braces in labels",
			in:   `vllm:num_requests_waiting{model_name="a \"b\" {c}, d",engine="0"} 4` + "\n",
			want: Sample{Waiting: 4},
		},
		{
			name: "usage clamped to 0..1",
			in:   "vllm:kv_cache_usage_perc 1.5\n",
			want: Sample{KVUsage: 1},
		},
		{
			name: "prefix-cache counters summed over engines",
			in: `vllm:num_requests_running{engine="0"} 1
vllm:prefix_cache_queries_total{engine="0",model_name="qwen"} 1000
vllm:prefix_cache_queries_total{engine="1",model_name="qwen"} 500
vllm:prefix_cache_hits_total{engine="0",model_name="qwen"} 600
vllm:prefix_cache_hits_total{engine="1",model_name="qwen"} 150
`,
			want: Sample{Running: 1, PrefixQueries: 1500, PrefixHits: 750, PrefixKnown: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestParseRejects lists inputs Parse refuses, and a part of each error.
func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		err  string
	}{
		{name: "prefix counters alone are no load series", in: "vllm:prefix_cache_hits_total 3\n", err: "no vLLM load series"},
		{name: "no load series", in: "process_cpu_seconds_total 3\n", err: "no vLLM load series"},
		{name: "empty", in: "", err: "no vLLM load series"},
		{name: "bad value", in: "vllm:num_requests_waiting abc\n", err: `value "abc"`},
		{name: "NaN", in: "vllm:num_requests_waiting NaN\n", err: "not finite"},
		{name: "unterminated labels", in: `vllm:num_requests_waiting{engine="0" 3` + "\n", err: "label without '='"},
		{name: "unterminated value", in: `vllm:num_requests_waiting{engine="0} 3` + "\n", err: "unterminated value"},
		{name: "unterminated set", in: `vllm:num_requests_waiting{engine="0",` + "\n", err: "unterminated label set"},
		{name: "unquoted label", in: `vllm:num_requests_waiting{engine=0} 3` + "\n", err: "not quoted"},
		{name: "missing value", in: `vllm:num_requests_waiting{engine="0"}` + "\n", err: "want a value"},
		{name: "line too long", in: "vllm:num_requests_waiting{a=\"" + strings.Repeat("x", maxLine) + "\"} 1\n", err: "too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, %v; want an error containing %q", got, err, tc.err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("vllm:num_requests_waiting{engine=\"0\"} 3\n")
	f.Add("vllm:cache_config_info{num_gpu_blocks=\"10\",block_size=\"16\"} 1\n")
	f.Add("vllm:kv_cache_usage_perc{a=\"\\\"\"} 0.5 123\n# x\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		if s.KVUsage < 0 || s.KVUsage > 1 || s.GPUBlocks < 0 || s.CPUBlocks < 0 || s.BlockSize < 0 {
			t.Fatalf("out-of-range sample %+v", s)
		}
	})
}

type sink struct {
	mu  sync.Mutex
	got map[string]Sample
}

func (s *sink) Scraped(replica string, sm Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got[replica] = sm
}

func (s *sink) get(replica string) (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.got[replica]
	return sm, ok
}

// TestScraper scrapes a real Prometheus registry exporting vLLM's series over
// HTTP, follows changes, and keeps the last sample when a replica fails.
func TestScraper(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	labels := []string{"model_name", "engine"}
	waiting := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting"}, labels)
	usage := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:kv_cache_usage_perc"}, labels)
	reg.MustRegister(waiting, usage)
	waiting.WithLabelValues("qwen", "0").Set(2)
	usage.WithLabelValues("qwen", "0").Set(0.5)
	var broken sync.Mutex
	fail := false
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		broken.Lock()
		f := fail
		broken.Unlock()
		if f {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	sk := &sink{got: map[string]Sample{}}
	targets := []Target{{ID: "r1", URL: srv.URL + "/metrics"}, {ID: "r2", URL: srv.URL + "/metrics"}}
	s, err := Start(context.Background(), func() []Target { return targets }, sk, Options{Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	poll.Until(t, "first scrape", func() bool {
		a, ok1 := sk.get("r1")
		_, ok2 := sk.get("r2")
		return ok1 && ok2 && a.Waiting == 2 && a.KVUsage == 0.5
	})
	waiting.WithLabelValues("qwen", "0").Set(9)
	poll.Until(t, "the change", func() bool { a, _ := sk.get("r1"); return a.Waiting == 9 })

	broken.Lock()
	fail = true
	broken.Unlock()
	poll.Until(t, "a failed scrape", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.failures["r1"] >= 2
	})
	if a, _ := sk.get("r1"); a.Waiting != 9 {
		t.Errorf("after failures the sink holds %+v; want the last good sample", a)
	}
}

func TestStartRejectsNil(t *testing.T) {
	t.Parallel()
	if _, err := Start(context.Background(), nil, &sink{}, Options{}); err == nil {
		t.Error("nil targets: got nil error")
	}
}
