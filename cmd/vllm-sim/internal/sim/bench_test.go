package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/config"
)

// BenchmarkCompletions measures short completions per second through the
// whole simulator (HTTP, tokenizer, engine, KV cache) with the latency model
// off, from 64 concurrent keep-alive clients on loopback (SIM_BENCH_CLIENTS
// changes that). The client runs in the same process, so the figure is what
// two cores give to server and load generator together. The simulator must
// never be what limits a benchmark of routers.
func BenchmarkCompletions(b *testing.B) {
	cfg, err := config.Parse([]string{"serve", "bench-model", "--host", "127.0.0.1", "--port", "0", "--sim-latency=false"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Env{IntHashes: true}, slog.New(slog.NewTextHandler(io.Discard, nil)), func(a net.Addr) { addr <- a })
	}()
	url := fmt.Sprintf("http://%s/v1/completions", <-addr)
	defer func() { cancel(); <-done }()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	defer client.CloseIdleConnections()
	clients := 64
	if n, err := strconv.Atoi(os.Getenv("SIM_BENCH_CLIENTS")); err == nil {
		clients = n
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var failed sync.Once
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				body := fmt.Sprintf(`{"model":"bench-model","prompt":"user %d asks a short question about caching","max_tokens":4,"ignore_eos":true}`, i%256)
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					failed.Do(func() { b.Errorf("request failed: %v", err) })
				}
			}
		}()
	}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		work <- i
	}
	close(work)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	// On a shared machine wall clock measures waiting for a core too; the
	// process's CPU time per request (server and client together) does not.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/req")
}

// cpuTime is the process's user plus system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
