package scalebench

import (
	"math"
	"testing"
)

func TestGrowthOf(t *testing.T) {
	x := []float64{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
	curve := func(f func(float64) float64) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = f(v)
		}
		return y
	}
	tests := []struct {
		name string
		y    []float64
		want string
	}{
		{"constant", curve(func(float64) float64 { return 30 }), "constant"},
		{"noisy constant", curve(func(v float64) float64 { return 30 + math.Mod(v, 3) }), "constant"},
		{"logarithmic", curve(func(v float64) float64 { return 10 * math.Log(v) }), "logarithmic"},
		{"linear", curve(func(v float64) float64 { return 5 + 2*v }), "linear"},
		{"linear plus offset", curve(func(v float64) float64 { return 100 + v }), "linear"},
		{"falling", curve(func(v float64) float64 { return 1e6 / v }), "falling"},
		{"quadratic", curve(func(v float64) float64 { return v * v }), "super-linear"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g := growthOf(x, tt.y); g.Class != tt.want {
				t.Errorf("growth %v; want %s", g, tt.want)
			}
		})
	}
	if g := growthOf([]float64{1}, []float64{1}); g.Class != "too few points" {
		t.Errorf("one point: %v; want too few points", g)
	}
}

func TestProbeCount(t *testing.T) {
	tests := []struct {
		name           string
		blocks, stride int
		depths         []int
		want           int
	}{
		{"stride 1 reads every block", 512, 1, []int{512, 256}, 512},
		{"strided, all holders hold everything", 2048, 32, []int{2048, 2048}, 64},
		{"strided, one prefix ends mid-stride", 2048, 32, []int{2048, 100}, 64 + 32},
		{"strided, prefix ends at a stride's start", 2048, 32, []int{2048, 64}, 64 + 32},
		{"strided, two prefixes in one stride", 2048, 32, []int{2048, 65, 70}, 64 + 32},
		{"strided, a holder of nothing", 2048, 32, []int{2048, 0}, 64 + 32},
		{"short last stride", 40, 32, []int{40, 35}, 2 + 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := probeCount(tt.blocks, tt.stride, tt.depths); got != tt.want {
				t.Errorf("probes %d; want %d", got, tt.want)
			}
		})
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 131072: "131,072", 10_000_000: "10,000,000", -4096: "-4,096"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q; want %q", n, got, want)
		}
	}
}
