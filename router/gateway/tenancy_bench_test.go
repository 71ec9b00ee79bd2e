package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// benchKeys is a keys file of n tenants with limits no benchmark reaches;
// the first tenant's key is returned.
func benchKeys(b *testing.B, n int, isolated bool) (string, string) {
	b.Helper()
	var ts []string
	var first string
	for i := range n {
		key := fmt.Sprintf("llmgw-bench-key-%06d-0123456789abcdef", i)
		if i == 0 {
			first = key
		}
		ts = append(ts, fmt.Sprintf(`{"name": "t%d", "keys_sha256": [%q], "isolated": %v,
			"limits": {"requests_per_second": 1e9, "tokens_per_minute": 1000000000, "max_concurrent": 1000000, "max_streams": 1000000}}`,
			i, auth.HashKey(key).String(), isolated))
	}
	path := filepath.Join(b.TempDir(), "keys.json")
	src := `{"salt_secret": "bench-salt-secret-0123456789abcdef", "tenants": [` + strings.Join(ts, ",") + `]}`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		b.Fatal(err)
	}
	return path, first
}

// completionJSON is a non-streamed answer of about 1 KiB ending in usage.
var completionJSON = []byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"` +
	strings.Repeat("generated text ", 60) + `","finish_reason":"length"}],"usage":{"prompt_tokens":412,"completion_tokens":64,"total_tokens":476}}`)

// BenchmarkTenancy measures what API keys and limits add to one routed
// request, running exactly the code they add on the request's path:
// reading and hashing the bearer key and looking it up among 1000
// tenants, putting the tenant in the context, the limiter's admission
// against a tenant with every limit set (never reached), fair
// admission's uncontended path (the priority header parsed, one try that
// finds room), the x-ratelimit headers, passing a 1 KiB answer through
// the usage writer, reading its usage and finishing the grant. The
// planner's own part (the model check and, for an isolated tenant, the
// cache_salt rewrite) is router/route's BenchmarkTenantCheck. It reports
// the p50 and p99 of single iterations.
func BenchmarkTenancy(b *testing.B) {
	path, key := benchKeys(b, 1000, false)
	store, err := auth.Open(auth.Options{File: path})
	if err != nil {
		b.Fatal(err)
	}
	g := &Gateway{d: Deps{Auth: store, Metrics: NewMetrics()}}
	limiter := ratelimit.New()
	queue := admission.New(admission.Options{Timeout: 2 * time.Second, MaxWaiters: 1024})
	room := func() bool { return true }
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	in := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	in.Header.Set("Authorization", "Bearer "+key)
	times := make([]float64, 0, 1<<16)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		start := time.Now()
		c.Request = in
		g.authenticate(c)
		ten := tenant.FromContext(c.Request.Context())
		grant, st := limiter.Admit(ten, 412+64, false)
		if !st.Allowed {
			b.Fatalf("limits refused the request: %+v", st)
		}
		band, err := admission.ParsePriority(c.Request.Header.Get(admission.HeaderPriority))
		if err != nil {
			b.Fatal(err)
		}
		if err := queue.Admit(c.Request.Context(), "m", band, room); err != nil {
			b.Fatal(err)
		}
		st.SetHeaders(w.Header())
		uw := &usageWriter{ResponseWriter: w}
		_, _ = uw.Write(completionJSON)
		grant.Finish(usedTokens(uw.tail))
		uw.release()
		if len(times) < cap(times) {
			times = append(times, float64(time.Since(start).Nanoseconds()))
		}
		w.Body.Reset()
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(p50(times), "p50-ns")
	b.ReportMetric(pct(times, 0.99), "p99-ns")
}

// cpuTime is the CPU time the process has used (user and system, every
// thread): on a shared machine, wall-clock times include other
// processes' turns on the CPU, this does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func pct(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	// p50 sorted v in place already when called after it.
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

// BenchmarkTenancyRouted is the cross-check over real HTTP: each iteration
// sends the same completion once through a gateway without keys and once
// through one with keys and limits, to the same backend, and reports the
// p50 of each and of their difference. Loopback HTTP varies by more than
// the difference, so BenchmarkTenancy is the figure to quote.
func BenchmarkTenancyRouted(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(completionJSON)
	}))
	defer backend.Close()
	addr := backend.Listener.Addr().String()
	plain := newHarness(b, 1<<20, addr)
	path, key := benchKeys(b, 1000, false)
	store, err := auth.Open(auth.Options{File: path})
	if err != nil {
		b.Fatal(err)
	}
	keyed := newHarnessWith(b, func(d *testDeps, _ *scheduler.Config) { d.Auth, d.Route.Limits = store, ratelimit.New() }, addr)
	body := `{"model":"m","max_tokens":64,"prompt":"` + strings.Repeat("a prompt of some length ", 170) + `"}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	run := func(url, key string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	run(plain.srv.URL+"/v1/completions", "")
	run(keyed.srv.URL+"/v1/completions", key)
	var ps, ks, diff []float64
	for b.Loop() {
		p := run(plain.srv.URL+"/v1/completions", "")
		k := run(keyed.srv.URL+"/v1/completions", key)
		ps = append(ps, float64(p.Microseconds()))
		ks = append(ks, float64(k.Microseconds()))
		diff = append(diff, float64((k - p).Microseconds()))
	}
	b.ReportMetric(p50(ps), "plain-p50-µs")
	b.ReportMetric(p50(ks), "keyed-p50-µs")
	b.ReportMetric(p50(diff), "added-p50-µs")
}
