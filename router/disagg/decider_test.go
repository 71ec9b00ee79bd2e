package disagg

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestThresholdRequired(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		th            Threshold
		prompt, want  int
		skipAt, below int // cached counts that must and must not skip
	}{
		{"fraction", Threshold{Fraction: 0.9}, 1000, 900, 900, 899},
		{"fraction rounds up", Threshold{Fraction: 0.9}, 101, 91, 91, 90},
		{"tokens", Threshold{Tokens: 512}, 4096, 512, 512, 511},
		{"both: the larger", Threshold{Tokens: 512, Fraction: 0.5}, 4096, 2048, 2048, 2047},
		{"both: the count on a short prompt", Threshold{Tokens: 512, Fraction: 0.5}, 600, 512, 512, 511},
		{"zero is one token", Threshold{}, 100, 1, 1, 0},
		{"whole prompt", Threshold{Fraction: 1}, 333, 333, 333, 332},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := c.th.Required(c.prompt); got != c.want {
				t.Errorf("Required(%d) = %d; want %d", c.prompt, got, c.want)
			}
			if !c.th.SkipRemotePrefill(c.prompt, c.skipAt) {
				t.Errorf("%d of %d cached: want the remote prefill skipped", c.skipAt, c.prompt)
			}
			if c.th.SkipRemotePrefill(c.prompt, c.below) {
				t.Errorf("%d of %d cached: want a remote prefill", c.below, c.prompt)
			}
		})
	}
}

func TestThresholdValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		th   Threshold
		want string
	}{
		{Threshold{Tokens: -1}, "pd_skip_prefill_tokens -1 is negative"},
		{Threshold{Fraction: 1.5}, "pd_skip_prefill_fraction 1.5 is not in [0, 1]"},
		{Threshold{Fraction: -0.1}, "pd_skip_prefill_fraction -0.1 is not in [0, 1]"},
		{Threshold{Fraction: math.NaN()}, "pd_skip_prefill_fraction NaN is not in [0, 1]"},
	} {
		if err := c.th.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v; want %q", c.th, err, c.want)
		}
	}
	if err := DefaultThreshold().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
}

// TestSkipProperty: over random thresholds, prompts and cached counts, the
// decider never skips the remote prefill when the decode replica caches
// fewer tokens than the threshold (the larger of its count and its share
// of the prompt, at least one token), and always skips when it caches at
// least that many: the decision is monotonic in cached tokens.
func TestSkipProperty(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 20))
	for range 200000 {
		th := Threshold{Tokens: r.IntN(4096), Fraction: r.Float64()}
		if r.IntN(4) == 0 {
			th.Tokens = 0
		}
		if r.IntN(4) == 0 {
			th.Fraction = 0
		}
		prompt := r.IntN(1 << 17)
		cached := r.IntN(prompt + 2)
		skip := th.SkipRemotePrefill(prompt, cached)
		if cached < th.Tokens || float64(cached) < th.Fraction*float64(prompt) || cached == 0 {
			if skip {
				t.Fatalf("%+v: skipped with %d of %d tokens cached, under the threshold", th, cached, prompt)
			}
			continue
		}
		if !skip {
			t.Fatalf("%+v: prefilled remotely with %d of %d tokens cached, at or over the threshold", th, cached, prompt)
		}
		if !th.SkipRemotePrefill(prompt, cached+1) {
			t.Fatalf("%+v: not monotonic at %d of %d", th, cached+1, prompt)
		}
	}
}

func FuzzSkipRemotePrefill(f *testing.F) {
	f.Add(512, 0.9, 1000, 900)
	f.Add(0, 0.0, 0, 0)
	f.Fuzz(func(t *testing.T, tokens int, fraction float64, prompt, cached int) {
		th := Threshold{Tokens: tokens, Fraction: fraction}
		if th.Validate() != nil || prompt < 0 || prompt > 1<<30 || cached < 0 {
			return
		}
		if th.SkipRemotePrefill(prompt, cached) && (cached < tokens || float64(cached) < fraction*float64(prompt) || cached == 0) {
			t.Fatalf("%+v: skipped with %d of %d cached", th, cached, prompt)
		}
	})
}
