package route

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSLOObserve: an answer meets the target up to and including it.
func TestSLOObserve(t *testing.T) {
	m := newSLOMetrics(500 * time.Millisecond)
	for _, ttft := range []time.Duration{0, 500 * time.Millisecond, 500*time.Millisecond + 1, time.Minute} {
		m.observe("m", ttft)
	}
	for _, tt := range []struct {
		result string
		want   float64
	}{{"met", 2}, {"missed", 2}} {
		if got := testutil.ToFloat64(m.total.WithLabelValues("m", tt.result)); got != tt.want {
			t.Errorf("%s: %v; want %v", tt.result, got, tt.want)
		}
	}
}

// TestBeginPrefillCountsTTFTOnce: a replica's answer counts once against
// its model's target, however often answered is called; a request that
// ends unanswered counts nothing.
func TestBeginPrefillCountsTTFTOnce(t *testing.T) {
	pl := newTestPlanner(t, 1)
	pl.slo.target = time.Hour
	answered, end := pl.BeginPrefill("r0", 100, 100)
	answered()
	answered()
	end()
	_, end = pl.BeginPrefill("r0", 100, 100)
	end()
	if got := testutil.ToFloat64(pl.slo.total.WithLabelValues("m", "met")); got != 1 {
		t.Errorf("met %v; want 1", got)
	}
	if got := testutil.CollectAndCount(pl.slo.total); got != 1 {
		t.Errorf("%d series; want the one met", got)
	}
}
