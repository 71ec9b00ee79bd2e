package scalebench

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling OS thread's CPU time in nanoseconds: time it
// ran, not time it waited for a core (the machine may be shared).
func threadCPU() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("thread CPU clock: %w", err)
	}
	return ts.Nano(), nil
}

// quantile is the q quantile of samples, sorting them in place; 0 when
// there are none.
func quantile(samples []float64, q float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	return samples[min(len(samples)-1, int(q*float64(len(samples))))]
}

// median of values, without changing them.
func median(values []float64) float64 {
	return quantile(slices.Clone(values), 0.5)
}
