package gateway

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkStreamOverhead measures what the router adds to a streamed chat
// request: each iteration streams the same 16-event SSE answer once
// directly from the replica and once through the router (parse, hash,
// schedule, proxy), so both see the same machine state. It reports the p50
// of each and of their difference.
func BenchmarkStreamOverhead(b *testing.B) {
	sse := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := range 16 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
			f.Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
	h := newHarnessB(b, sse)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("a fairly long prompt ", 100) + `"}]}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	run := func(url string) time.Duration {
		start := time.Now()
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
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
	direct := "http://" + h.backends[0] + "/v1/chat/completions"
	routed := h.srv.URL + "/v1/chat/completions"
	run(direct)
	run(routed)
	var ds, rs, diff []float64
	b.ResetTimer()
	for b.Loop() {
		d := run(direct)
		r := run(routed)
		ds = append(ds, float64(d.Microseconds()))
		rs = append(rs, float64(r.Microseconds()))
		diff = append(diff, float64((r - d).Microseconds()))
	}
	b.ReportMetric(p50(ds), "direct-p50-µs")
	b.ReportMetric(p50(rs), "router-p50-µs")
	b.ReportMetric(p50(diff), "overhead-p50-µs")
}

func p50(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
