package workload

import (
	"math/rand/v2"
	"time"
)

// poisson returns n arrival offsets of a Poisson process at rate per
// second (exponential gaps), starting with the first gap. A rate of 0 or
// less sends everything at once.
func poisson(rng *rand.Rand, n int, rate float64) []time.Duration {
	at := make([]time.Duration, n)
	if rate <= 0 {
		return at
	}
	t := 0.0
	for i := range at {
		t += rng.ExpFloat64() / rate
		at[i] = time.Duration(t * float64(time.Second))
	}
	return at
}
