package bench

import (
	"context"
	"testing"
)

// TestPrefixCopiesCountsAnsweredCopies: the count sums result="ok" over
// the routers and leaves out copies that failed or were never sent, and
// a label whose name only ends in "result"; a router whose metrics cannot
// be read or parsed, or that has no admin listener, makes the count
// unknown rather than short.
func TestPrefixCopiesCountsAnsweredCopies(t *testing.T) {
	pages := map[string]string{
		"/r0/metrics": "# HELP llmgw_prefix_warms_total copies\n# TYPE llmgw_prefix_warms_total counter\n" +
			"llmgw_prefix_warms_total{result=\"ok\"} 3\n" +
			"llmgw_prefix_warms_total{result=\"error\"} 2\n" +
			"llmgw_prefix_warms_total{result=\"skipped\"} 5\n" +
			"llmgw_prefix_warms_totally{result=\"ok\"} 100\n",
		"/r1/metrics": "llmgw_prefix_warms_total{result=\"ok\"} 4\nllmgw_prefix_warms_total{result=\"canceled\"} 1\n" +
			"llmgw_prefix_warms_total{xresult=\"ok\"} 50\n",
		"/none/metrics":   "llmgw_requests_total{code=\"200\"} 9\n",
		"/broken/metrics": "llmgw_prefix_warms_total{result=\"ok\" 3\n",
	}
	srv := servePages(t, pages)
	tests := []struct {
		name   string
		admins []string
		want   int
		err    bool
	}{
		{"two routers", []string{srv.URL + "/r0", srv.URL + "/r1"}, 7, false},
		{"a router that made none", []string{srv.URL + "/none"}, 0, false},
		{"no routers", nil, 0, false},
		{"metrics not found", []string{srv.URL + "/r0", srv.URL + "/gone"}, 0, true},
		{"a page that does not parse", []string{srv.URL + "/r0", srv.URL + "/broken"}, 0, true},
		{"no admin listener", []string{srv.URL + "/r0", ""}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prefixCopies(context.Background(), srv.Client(), tt.admins)
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("prefixCopies = %d, %v; want %d, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}
