package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// load sends completions through url from workers goroutines until stop
// closes, and returns, once they have all ended, how many were answered by
// each replica and every failure.
func load(url string, workers int, stop <-chan struct{}) func() (map[string]int, []string) {
	var (
		mu       sync.Mutex
		served   = map[string]int{}
		failures []string
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body, _ := json.Marshal(map[string]any{"model": "sim-model", "prompt": prompt(10000*w + i), "max_tokens": 16})
				req, _ := http.NewRequest(http.MethodPost, url+"/v1/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+testAPIKey)
				resp, err := testClient.Do(req)
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failures = append(failures, fmt.Sprintf("%d %s", resp.StatusCode, b))
					} else {
						served[resp.Header.Get("X-Llmgw-Replica")]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	return func() (map[string]int, []string) {
		wg.Wait()
		return served, failures
	}
}

// TestDrainLosesNoRequest stops a shard as Nomad stops an allocation of
// the shipped demo-sim job (deregistration, shutdown_delay, signal) while
// requests keep flowing through the router: none fails, and once the
// shard has left, the others answer everything.
func TestDrainLosesNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, vllm-sim shards and routers")
	}
	o := options(t)
	o.Shards, o.Routers = 2, 1
	o.SimArgs = []string{"--sim-latency=true", "--sim-inter-token-latency", "5ms"}
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	url, gone := f.RouterURLs()[0], f.Shards()[0].ReplicaID

	stop := make(chan struct{})
	results := load(url, 4, stop)
	var once sync.Once
	finish := func() (map[string]int, []string) {
		var served map[string]int
		var failures []string
		once.Do(func() { close(stop); served, failures = results() })
		return served, failures
	}
	defer finish() // the load's goroutines end with the test, even one that fails
	waitFor(t, "requests in flight on the shard to stop", func() bool {
		n, err := f.inFlight(context.Background(), f.Shards()[0].URL)
		return err == nil && n > 0
	})
	if err := f.StopShard(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	served, failures := finish()
	if len(failures) > 0 {
		t.Errorf("%d requests failed while the shard drained; first: %s", len(failures), failures[0])
	}
	if served[gone] == 0 || len(served) != 2 {
		t.Errorf("served by %v; want both shards, the stopped one before it left", served)
	}
	for i := range 4 {
		if a := complete(t, url, prompt(20000+i)); a.code != 200 || a.replica == gone {
			t.Errorf("request %d after the stop: %d from %q; want 200 from the other shard", i, a.code, a.replica)
		}
	}
}
