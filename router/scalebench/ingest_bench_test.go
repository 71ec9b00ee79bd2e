package scalebench

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkIngest is the sweep's ingest figure alone, at the replicas
// axis's points that matter for it (the base, and past 1,024) over the
// base's 1,000,000 indexed blocks: block events decoded and applied per
// CPU-second of the applying thread, the median of five runs of 200 ms.
// The setup (a snapshot of the whole fleet) is not measured; the
// benchmark's own time is, so -benchtime 1x is enough.
func BenchmarkIngest(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			f, err := newFleet(n, 1_000_000, 8<<10, 1, 1)
			if err != nil {
				b.Fatal(err)
			}
			if f.indexed != n {
				b.Fatalf("%d of %d replicas indexed", f.indexed, n)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var rates []float64
			for b.Loop() {
				rates = rates[:0]
				for range 5 {
					ev, refused, err := ingestRate(f, 200*time.Millisecond, 1)
					if err != nil {
						b.Fatal(err)
					}
					if refused != 0 {
						b.Fatalf("%.0f%% of updates refused", 100*refused)
					}
					rates = append(rates, ev)
				}
			}
			b.ReportMetric(median(rates), "events/cpu-s")
		})
	}
}
