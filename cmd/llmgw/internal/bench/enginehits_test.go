package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEngineHitsSumsEveryEngineAndRank: the hit counter is summed over
// engines and their label sets (data-parallel ranks), ignoring metrics
// whose names only start with it; a page that cannot be read is an error.
func TestEngineHitsSumsEveryEngineAndRank(t *testing.T) {
	pages := map[string]string{
		"/a/metrics": "# HELP vllm:prefix_cache_hits_total hits\n# TYPE vllm:prefix_cache_hits_total counter\n" +
			"vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 96\n" +
			"vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 32\n" +
			"vllm:prefix_cache_hits_total_created 1.7e9\nvllm:prefix_cache_queries_total 400\n",
		"/b/metrics": "vllm:prefix_cache_hits_total 16 1700000000000\n",
	}
	srv := servePages(t, pages)
	tests := []struct {
		engines []string
		want    float64
		err     bool
	}{
		{[]string{srv.URL + "/a", srv.URL + "/b"}, 144, false},
		{[]string{srv.URL + "/b"}, 16, false},
		{nil, 0, false},
		{[]string{srv.URL + "/a", srv.URL + "/gone"}, 0, true},
	}
	for _, tt := range tests {
		got, err := engineHits(context.Background(), srv.Client(), tt.engines)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("engineHits(%v) = %v, %v; want %v, error %v", tt.engines, got, err, tt.want, tt.err)
		}
	}
}

// servePages serves each page at its path (404 elsewhere) until the test
// ends.
func servePages(t *testing.T, pages map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestScrapeCounterRefusesAnOversizedPage: a page past maxPage is an
// error, not a count of the part that was read; the same samples on a page
// within it count.
func TestScrapeCounterRefusesAnOversizedPage(t *testing.T) {
	sample := "vllm:prefix_cache_hits_total 7\n"
	pad := strings.Repeat("# padding\n", maxPage/10)
	srv := servePages(t, map[string]string{
		"/fits/metrics": sample + pad[:maxPage-len(sample)-1] + "\n",
		"/over/metrics": sample + pad,
	})
	n, err := scrapeCounter(context.Background(), srv.Client(), srv.URL+"/fits/metrics", engineHitsMetric, labelPair{})
	if n != 7 || err != nil {
		t.Errorf("page of maxPage bytes: %v, %v; want 7", n, err)
	}
	if _, err := scrapeCounter(context.Background(), srv.Client(), srv.URL+"/over/metrics", engineHitsMetric, labelPair{}); err == nil || !strings.Contains(err.Error(), "page over") {
		t.Errorf("page over maxPage: error %v; want one saying so", err)
	}
}
