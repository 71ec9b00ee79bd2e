package forward

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
)

// fanoutSinkEnv makes TestFanoutSinkProcess serve that many routers'
// ingest endpoints, in a child process of BenchmarkForwardFanout, so the
// driver's CPU is measured without its routers'.
const fanoutSinkEnv = "LLMGW_FANOUT_SINK_ROUTERS"

// TestFanoutSinkProcess is BenchmarkForwardFanout's routers: it answers
// every update 204, as a router that accepted it, prints its base URLs
// one a line, and serves until its stdin closes. Skipped unless run as
// that child.
func TestFanoutSinkProcess(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(fanoutSinkEnv))
	if err != nil {
		t.Skip("the routers of BenchmarkForwardFanout; runs only as its child")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Println("http://" + ln.Addr().String())
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// BenchmarkForwardFanout measures a driver host with 200 replicas
// forwarding to 1, 8 and 32 routers: every replica stores and evicts a
// chain of 8 blocks 10 times a second (16 block events a batch, 32,000
// a second on the host), and the forwarder sends each router its own
// delta every 250 ms. The routers run in a child process; the figures
// are this process's CPU (intake and forwarding), posts and body bytes
// per second. Run it with -benchtime=1x.
func BenchmarkForwardFanout(b *testing.B) {
	for _, routers := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("replicas=200/routers=%d", routers), func(b *testing.B) {
			const replicas, perSec = 200, 10
			urls := startFanoutSink(b, routers)
			// Batch i stores chain i and evicts chain i-64: cycling through
			// 128 keeps 64 chains (512 blocks) per replica, all churning.
			// Built as decoded batches: intake is measured by
			// BenchmarkDecodeApply.
			batches := churnBatches(128, 64)
			var sent atomic.Int64
			client := &http.Client{Transport: &countingTransport{rt: http.DefaultTransport.(*http.Transport).Clone(), n: &sent}}
			defer client.CloseIdleConnections()
			eps := make([]RouterEndpoint, routers)
			for i, u := range urls {
				eps[i] = RouterEndpoint{ID: fmt.Sprint("router-", i), URL: u, Ready: true}
			}
			for range b.N {
				s := kvevents.NewStore()
				f, err := Start(s, newStaticRouters(eps...), Config{DriverID: "bench", Token: "t", Client: client})
				if err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() { // the engines' event stream
					defer close(done)
					t := time.NewTicker(time.Second / perSec)
					defer t.Stop()
					for i := 0; ; i++ {
						for r := range replicas {
							s.Apply(fmt.Sprint("alloc-", r, "/vllm"), 0, batches[(i+r)%len(batches)])
						}
						select {
						case <-stop:
							return
						case <-t.C:
						}
					}
				}()
				time.Sleep(time.Second) // snapshots and warm connections
				posts0, bytes0, cpu0, t0 := totalSent(f), sent.Load(), processCPU(), time.Now()
				time.Sleep(3 * time.Second)
				posts1, bytes1, cpu1 := totalSent(f), sent.Load(), processCPU()
				secs := time.Since(t0).Seconds()
				close(stop)
				<-done
				f.Close()
				b.ReportMetric(100*(cpu1-cpu0).Seconds()/secs, "%core")
				b.ReportMetric(float64(posts1-posts0)/secs, "posts/s")
				b.ReportMetric(float64(bytes1-bytes0)/secs, "B/s")
				b.ReportMetric(float64(replicas*perSec*16), "events/s")
			}
		})
	}
}

func totalSent(f *Forwarder) uint64 {
	var n uint64
	for _, st := range f.Status() {
		n += st.Sent
	}
	return n
}

// startFanoutSink starts TestFanoutSinkProcess with n routers and
// returns their URLs; the child ends with the benchmark.
func startFanoutSink(b *testing.B, n int) []string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFanoutSinkProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), fanoutSinkEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	var urls []string
	for len(urls) < n && sc.Scan() {
		if u := strings.TrimSpace(sc.Text()); strings.HasPrefix(u, "http://") {
			urls = append(urls, u)
		}
	}
	if len(urls) < n {
		b.Fatalf("the sink process gave %d of %d router URLs", len(urls), n)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return urls
}

// countingTransport counts the request body bytes it sends.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ContentLength > 0 {
		c.n.Add(r.ContentLength)
	}
	return c.rt.RoundTrip(r)
}

func (c *countingTransport) CloseIdleConnections() {
	if t, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// churnBatches is intake's churn workload as decoded batches: batch i
// stores a fresh 8-block chain (block size 16) and evicts, one removal
// each, the 8 blocks batch i-k stored.
func churnBatches(m, k int) []*kvevents.Batch {
	const perBatch, bs = 8, 16
	hashOf := func(slot, j int) uint64 { return uint64(slot*perBatch+j)*0x9e3779b97f4a7c15 | 1 }
	out := make([]*kvevents.Batch, m)
	for i := range m {
		hashes := make([]uint64, perBatch)
		for j := range hashes {
			hashes[j] = hashOf(i, j)
		}
		tokens := kvtest.Toks(i*7919, perBatch*bs)
		evs := []kvevents.Event{kvtest.Stored(hashes, nil, tokens, bs)}
		old := (i - k + m) % m
		for j := range perBatch {
			evs = append(evs, kvtest.Removed(kvevents.MediumGPU, hashOf(old, j)))
		}
		out[i] = &kvevents.Batch{TS: 1.7e9, Events: evs}
	}
	return out
}
