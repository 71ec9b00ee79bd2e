package nomad_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/nomad"
	"github.com/llmgw/llmgw/nomad/nomadtest"
)

// BenchmarkDiscoveryCalls measures what replica discovery costs the Nomad
// servers: routers each watch a service of replicas registrations on the
// stand-in, with default options, and the benchmark counts the API calls
// all of them make per second once every watcher has its first set (the
// start, one read of each allocation, is left out). Each iteration is
// one window of discoveryWindow.
func BenchmarkDiscoveryCalls(b *testing.B) {
	for _, replicas := range []int{100, 1000} {
		b.Run(fmt.Sprintf("replicas=%d/routers=8", replicas), func(b *testing.B) {
			benchDiscoveryCalls(b, replicas, 8)
		})
	}
}

// discoveryWindow is one measured window: six of the default blocking
// waits, so that the rounds of checks reads average out.
const discoveryWindow = 30 * time.Second

func benchDiscoveryCalls(b *testing.B, replicas, routers int) {
	s := nomadtest.New("")
	if err := s.Listen("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range replicas {
		alloc := fmt.Sprintf("a%05d", i)
		s.Register(replicaReg(alloc, 9000+i))
		s.SetCheck(alloc, nomadtest.Check{Check: "alive", Service: "vllm", Status: "success"})
	}
	client, err := nomad.NewClient(nomad.Config{Address: s.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ws []*nomad.Watcher[consul.Replica]
	for range routers {
		w, err := nomad.WatchReplicas(ctx, client, "vllm", nomad.WatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	for _, w := range ws {
		poll.Until(b, "every replica", func() bool { rs, _ := w.Current(); return len(rs) == replicas })
	}
	b.ResetTimer()
	before, start := s.Calls(), time.Now()
	for range b.N {
		time.Sleep(discoveryWindow) // the measured window: the watchers run on their own
	}
	took := time.Since(start).Seconds()
	after := s.Calls()
	b.StopTimer()
	b.ReportMetric(float64(after.Total()-before.Total())/took, "calls/s")
	b.ReportMetric(float64(after.Checks-before.Checks)/took, "checks/s")
	b.ReportMetric(float64(after.Service-before.Service)/took, "services/s")
}
