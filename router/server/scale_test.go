//go:build !race

// The scale test is left out of -race builds: the detector makes its
// million blocks minutes of work and its shadow memory hides the RSS
// bound. `make unit` runs it once more without -race.

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
)

// Scale test: one model with 1,000 replicas in a real Consul agent, their
// KV state posted through the real ingest endpoint by ten drivers.
const (
	scaleReplicas = 1000
	scaleDrivers  = 10
	scaleBlocks   = 1000 // synthetic blocks per replica
	// scaleBytesPerBlock is the router's documented RSS bound per indexed
	// block (cmd/llmgw-router/README.md, "Index bounds").
	scaleBytesPerBlock = 256
)

// TestScaleThousandReplicas registers 1,000 replicas of one model in
// Consul, each with its own llmgw-replica meta, and posts 1,000,000
// synthetic blocks through the ingest endpoint; a prompt is cached whole
// on replica #900 and a quarter of it on 50 others. It asserts that the
// prompt's decision picks #900 in exact mode, that every replica is
// exact, that the router's RSS grew by less than the documented bound per
// block, and that once 500 replicas leave Consul the index holds none of
// their blocks by the time the replica set has dropped them (the time
// from Consul's last answer is logged).
func TestScaleThousandReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test: 1,000 replicas in Consul")
	}
	start := time.Now()
	agent := consultest.Start(t)
	s := startScaleRouter(t, agent.Addr)
	registerScaleReplicas(t, agent.Client)
	poll.Until(t, "1,000 replicas in the set", func() bool { return len(s.set.ForModel("m")) == scaleReplicas })
	t.Logf("%v: 1,000 replicas registered and listed", time.Since(start))

	text := strings.Repeat("the cached system prompt of replica nine hundred ", 40)
	keys := scalePromptKeys(t, text)
	runtime.GC()
	rss0 := rssBytes(t)
	postScaleState(t, s, keys)
	t.Logf("%v: KV state posted", time.Since(start))
	ix := s.models.For("m")
	if st := ix.Stats(); st.Holders != scaleReplicas || st.Keys < scaleReplicas*(scaleBlocks-len(keys)) {
		t.Fatalf("index after ingest: %+v; want %d holders", st, scaleReplicas)
	}
	runtime.GC()
	grown := rssBytes(t) - rss0
	blocks := ix.Stats().Keys
	t.Logf("RSS grew %d MiB for %d blocks: %d bytes per block (bound %d)", grown>>20, blocks, grown/int64(blocks), scaleBytesPerBlock)
	if grown > int64(blocks)*scaleBytesPerBlock {
		t.Errorf("RSS grew %d bytes for %d blocks: over the documented %d bytes per block", grown, blocks, scaleBytesPerBlock)
	}
	for i := range scaleReplicas {
		if m := s.set.Mode(scaleID(i)); m != "exact" {
			t.Fatalf("replica %s in %s mode after its snapshot (%s)", scaleID(i), m, s.set.ModeReason(scaleID(i)))
		}
	}
	explainChosen(t, s, text, scaleID(900))
	leaveScale(t, agent.Client, s, 500)
	explainChosen(t, s, text, scaleID(900))
}

// scaleID is replica i's id; scaleNode the node it runs on, one of twenty
// GPU nodes of 50 replicas each.
func scaleID(i int) string   { return fmt.Sprintf("alloc-%04d/vllm", i) }
func scaleNode(i int) string { return fmt.Sprintf("gpu-%02d", i/50) }

// startScaleRouter starts a router watching the "vllm" service of the
// Consul agent at addr. The replicas' addresses do not answer, so neither
// scraping nor tokenizing on them can work: the router tokenizes in
// process.
func startScaleRouter(t *testing.T, addr string) *Server {
	t.Helper()
	c := testConfig()
	c.Replicas = nil
	c.Consul.Address, c.Consul.Services = addr, []string{"vllm"}
	c.Models = map[string]config.Model{"m": {}}
	c.ScrapeInterval = time.Hour
	s, err := Start(context.Background(), c, nil, WithEncoder("m", simencoder.Encoder{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// registerScaleReplicas registers the replicas in the catalog, each with
// its own llmgw-replica meta, in transactions of up to 64 operations.
func registerScaleReplicas(t *testing.T, client *api.Client) {
	t.Helper()
	var ops api.TxnOps
	for n := range scaleReplicas / 50 {
		ops = append(ops, &api.TxnOp{Node: &api.NodeTxnOp{Verb: api.NodeSet, Node: api.Node{Node: scaleNode(n * 50), Address: "127.0.0.1"}}})
	}
	for i := range scaleReplicas {
		ops = append(ops, &api.TxnOp{Service: &api.ServiceTxnOp{Verb: api.ServiceSet, Node: scaleNode(i), Service: api.AgentService{
			ID: fmt.Sprintf("vllm-%04d", i), Service: "vllm", Tags: []string{consul.ReplicaTag}, Address: "127.0.0.1", Port: 1 + i%4,
			Meta: map[string]string{consul.MetaModel: "m", consul.MetaReplica: scaleID(i), consul.MetaKVEvents: "true", consul.MetaBlockSize: "16"},
		}}})
	}
	txn(t, client, ops)
}

// scalePromptKeys returns text's canonical keys, as the router computes
// them.
func scalePromptKeys(t *testing.T, text string) []uint64 {
	t.Helper()
	ps, errs := prompt.New(map[string]prompt.Source{"m": {Encoder: simencoder.Encoder{}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	req, err := openai.Parse(openai.Completion, explainBody(text))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ps.Compute(req, 16)
	if err != nil || len(res.Keys) < 16 || len(res.Keys) > scaleBlocks/4 {
		t.Fatalf("prompt keys: %d, %v", len(res.Keys), err)
	}
	return res.Keys
}

// postScaleState posts, from ten drivers, a snapshot of their 100
// replicas each, scaleBlocks synthetic blocks a replica: the prompt's
// keys cached whole on replica #900 and a quarter of them on 50 others.
func postScaleState(t *testing.T, s *Server, prompt []uint64) {
	t.Helper()
	parallel(t, scaleDrivers, func(d int) error {
		u := &kvwire.Update{Version: kvwire.Version, Driver: fmt.Sprintf("node-%d", d), Epoch: 1, Snapshot: true}
		for i := d; i < scaleReplicas; i += scaleDrivers {
			keys := make([]uint64, 0, scaleBlocks)
			for b := range scaleBlocks {
				keys = append(keys, uint64(i)<<32|uint64(b)+1)
			}
			switch {
			case i == 900:
				keys = append(keys[:scaleBlocks-len(prompt)], prompt...)
			case i%20 == 3:
				keys = append(keys[:scaleBlocks-len(prompt)/4], prompt[:len(prompt)/4]...)
			}
			u.Replicas = append(u.Replicas, kvwire.Replica{ID: scaleID(i), BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys}}})
		}
		return kvwire.Send(context.Background(), http.DefaultClient, "http://"+s.IngestAddr(), "tok", u)
	})
}

// leaveScale deregisters the first n replicas from Consul and checks that
// the index holds none of their blocks by the time the replica set has
// dropped them (the time from Consul's last answer is logged).
func leaveScale(t *testing.T, client *api.Client, s *Server, n int) {
	t.Helper()
	var ops api.TxnOps
	for i := range n {
		ops = append(ops, &api.TxnOp{Service: &api.ServiceTxnOp{Verb: api.ServiceDelete, Node: scaleNode(i), Service: api.AgentService{ID: fmt.Sprintf("vllm-%04d", i), Service: "vllm"}}})
	}
	txn(t, client, ops)
	answered := time.Now()
	ix := s.models.For("m")
	poll.Until(t, "the replicas to leave the set", func() bool { return len(s.set.ForModel("m")) == scaleReplicas-n })
	poll.Until(t, "their blocks to leave the index", func() bool { return ix.Stats().Holders == scaleReplicas-n })
	t.Logf("%d replicas left the index %v after Consul's last answer", n, time.Since(answered))
	for i := range n {
		if gpu, cpu := ix.ReplicaBlocks(scaleID(i)); gpu+cpu != 0 {
			t.Fatalf("replica %s gone from Consul, still %d blocks in the index", scaleID(i), gpu+cpu)
		}
	}
	if st := ix.Stats(); st.Keys-st.Unswept > (scaleReplicas-n)*scaleBlocks {
		t.Errorf("index after %d left: %+v; want at most %d live keys", n, st, (scaleReplicas-n)*scaleBlocks)
	}
}

// explainChosen asks the admin API to decide for text and checks that
// replica is chosen, in exact mode.
func explainChosen(t *testing.T, s *Server, text, replica string) {
	t.Helper()
	resp, err := http.Post("http://"+s.AdminAddr()+"/admin/explain/completions", "application/json", bytes.NewReader(explainBody(text)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Chosen struct {
			Replica      string `json:"replica"`
			Mode         string `json:"mode"`
			CachedTokens int    `json:"cached_tokens"`
		} `json:"chosen"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("explain: %d, %v", resp.StatusCode, err)
	}
	if out.Chosen.Replica != replica || out.Chosen.Mode != "exact" {
		t.Errorf("prompt cached only on %s went to %+v; want it, in exact mode", replica, out.Chosen)
	}
}

func explainBody(text string) []byte {
	b, _ := json.Marshal(map[string]any{"model": "m", "prompt": text, "max_tokens": 1})
	return b
}

// txn applies ops in transactions of at most 64 operations (Consul's limit).
func txn(t *testing.T, c *api.Client, ops api.TxnOps) {
	t.Helper()
	for len(ops) > 0 {
		n := min(len(ops), 64)
		ok, resp, _, err := c.Txn().Txn(ops[:n], nil)
		if err != nil || !ok {
			var what []string
			for _, e := range resp.Errors[:min(len(resp.Errors), 3)] {
				what = append(what, fmt.Sprintf("op %d: %s", e.OpIndex, e.What))
			}
			t.Fatalf("consul txn: %v %v", err, what)
		}
		ops = ops[n:]
	}
}

// parallel runs fn(0..n-1) on 16 workers and fails the test on the first error.
func parallel(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs <- fn(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// rssBytes is the process's resident set size (VmRSS).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
