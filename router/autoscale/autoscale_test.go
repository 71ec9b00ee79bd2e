package autoscale

import (
	"math"
	"testing"
	"time"
)

func TestRecommend(t *testing.T) {
	p := Policy{TTFT: time.Second, InFlight: 16}
	tests := []struct {
		name string
		p    Policy
		d    Demand
		want Recommendation
	}{
		{"idle", p, Demand{PrefillRate: 20000}, Recommendation{}},
		{"one waiting at zero replicas", p, Demand{Waiting: 1}, Recommendation{Replicas: 1, ByInFlight: 1}},
		{"in flight and waiting add", p, Demand{InFlight: 30, Waiting: 3}, Recommendation{Replicas: 3, ByInFlight: 3}},
		{"exactly full", p, Demand{InFlight: 32}, Recommendation{Replicas: 2, ByInFlight: 2}},
		{"prefill rounds up", p, Demand{InFlight: 4, PrefillTokens: 50000, PrefillRate: 20000}, Recommendation{Replicas: 3, ByPrefill: 3, ByInFlight: 1}},
		{"a longer target clears more", Policy{TTFT: 5 * time.Second, InFlight: 16}, Demand{InFlight: 4, PrefillTokens: 50000, PrefillRate: 20000}, Recommendation{Replicas: 1, ByPrefill: 1, ByInFlight: 1}},
		{"unknown rate: prefill term off", p, Demand{InFlight: 1, PrefillTokens: 1 << 20}, Recommendation{Replicas: 1, ByInFlight: 1}},
		{"zero in-flight target counts one a replica", Policy{TTFT: time.Second}, Demand{InFlight: 5}, Recommendation{Replicas: 5, ByInFlight: 5}},
		{"negative counts are none", p, Demand{InFlight: -3, Waiting: -1, PrefillTokens: -10, PrefillRate: 1000}, Recommendation{}},
		{"saturates", Policy{TTFT: time.Nanosecond, InFlight: 1}, Demand{PrefillTokens: math.MaxInt, PrefillRate: 1e-9}, Recommendation{Replicas: math.MaxInt32, ByPrefill: math.MaxInt32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Recommend(tt.d); got != tt.want {
				t.Errorf("Recommend(%+v) = %+v; want %+v", tt.d, got, tt.want)
			}
		})
	}
}

// TestRecommendFollowsLoad: the count rises as requests arrive and falls
// back to 0 as they end, never below 1 while any is left.
func TestRecommendFollowsLoad(t *testing.T) {
	p := DefaultPolicy()
	prev := 0
	for n := 1; n <= 100; n++ {
		got := p.Recommend(Demand{InFlight: n}).Replicas
		if got < prev || got < 1 {
			t.Fatalf("%d in flight: %d replicas after %d", n, got, prev)
		}
		prev = got
	}
	if prev != 7 {
		t.Fatalf("100 in flight at 16 a replica: %d replicas; want 7", prev)
	}
	if got := p.Recommend(Demand{}).Replicas; got != 0 {
		t.Fatalf("idle: %d replicas; want 0", got)
	}
}

func TestMet(t *testing.T) {
	p := Policy{TTFT: 500 * time.Millisecond}
	for _, tt := range []struct {
		ttft time.Duration
		want bool
	}{{0, true}, {500 * time.Millisecond, true}, {500*time.Millisecond + 1, false}} {
		if got := p.Met(tt.ttft); got != tt.want {
			t.Errorf("Met(%s) = %v; want %v", tt.ttft, got, tt.want)
		}
	}
}
