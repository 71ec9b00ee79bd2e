package peerbench

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkPeerSharing measures peer load sharing at 2 to 32 routers
// while every router's load changes every 5 ms; run it with -benchtime=1x
// (each iteration is one Run of a few seconds). rate=off is the design
// before the per-router budget: every peer every interval; alone is the
// same routers and load sending nothing, the part of %core/router that
// is not peer sharing.
func BenchmarkPeerSharing(b *testing.B) {
	for _, rate := range []int{-1, 0, 1} {
		for _, n := range []int{2, 4, 8, 16, 32} {
			name := fmt.Sprintf("rate=%s/routers=%d", rateName(rate), n)
			b.Run(name, func(b *testing.B) {
				var res Result
				for range b.N {
					var err error
					o := Options{Routers: n, MaxRate: rate, Tenants: 8, Alone: rate == 1}
					if res, err = Run(context.Background(), o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(res.MessagesPerSec, "msgs/s/router")
				b.ReportMetric(res.BytesPerSec, "B/s/router")
				b.ReportMetric(100*res.CPUPerRouter, "%core/router")
				b.ReportMetric(float64(res.CPUPerMessage.Microseconds()), "cpu-µs/msg")
				b.ReportMetric(res.NominalPerSec, "nominal-msgs/s")
				b.ReportMetric(100*res.AtNominal, "%core-at-nominal")
			})
		}
	}
}

func rateName(r int) string {
	switch {
	case r < 0:
		return "off"
	case r == 0:
		return "budget"
	}
	return "alone"
}

// BenchmarkPeerSharingFleet measures 32 routers sharing the load of a
// large fleet, each router with requests in flight to nearly every
// replica (four per replica, to random ones), so every message lists
// them all: the JSON design before the compact wire (json), the compact
// wire (compact), and the same routers sending nothing (alone). Run it
// with -benchtime=1x; %core-at-nominal is the figure, HTTP included.
func BenchmarkPeerSharingFleet(b *testing.B) {
	for _, reps := range []int{1024, 4096} {
		for _, wire := range []string{"json", "compact", "alone"} {
			b.Run(fmt.Sprintf("replicas=%d/wire=%s", reps, wire), func(b *testing.B) {
				var res Result
				for range b.N {
					var err error
					o := Options{Routers: 32, Replicas: reps, InFlight: 4 * reps, Tenants: 8, Legacy: wire == "json", Alone: wire == "alone"}
					if res, err = Run(context.Background(), o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(res.MessagesPerSec, "msgs/s/router")
				b.ReportMetric(res.BytesPerSec, "B/s/router")
				b.ReportMetric(100*res.CPUPerRouter, "%core/router")
				b.ReportMetric(float64(res.CPUPerMessage.Microseconds()), "cpu-µs/msg")
				b.ReportMetric(100*res.AtNominal, "%core-at-nominal")
			})
		}
	}
}
