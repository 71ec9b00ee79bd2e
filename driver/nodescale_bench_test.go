package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// Node-scale shape: one plugin instance running nodeShards shards of
// nodeRanks data-parallel ranks each (a node of 8 GPUs per rank count),
// nodeClients requests in flight per shard, measured over nodeWindow.
const (
	nodeShards  = 8
	nodeRanks   = 2
	nodeClients = 4
	nodeWindow  = 10 * time.Second
	clockTicks  = 100 // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux
)

// BenchmarkNodeScale runs the real plugin binary under the plugin host
// with nodeShards vllm-sim shards, each with nodeRanks data-parallel ranks
// publishing KV events, drives every shard with completions of fresh
// prompts (every request stores new blocks and, once the small cache is
// full, evicts old ones), and measures over nodeWindow the CPU (from
// /proc/<pid>/stat) and RSS (VmRSS, and VmHWM, its peak) of the plugin
// and of each shard's supervisor, and the KV batches the plugin took in.
// The engines' CPU is reported beside them, for scale. Run it with
// -benchtime 1x (make bench-node); on a shared machine the engines and the
// load take most of the cores, so the plugin's share is what it used
// while they ran.
func BenchmarkNodeScale(b *testing.B) {
	h, err := pluginhost.Launch(pluginBin, pluginhost.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: os.Stderr, Level: hclog.Error}),
	})
	if err != nil {
		b.Fatal(err)
	}
	h.CloseAtEnd(b, shardGroups)
	c := b.Context()
	nomad := &base.NomadConfig{Driver: &base.NomadDriverConfig{ClientMinPort: 27000, ClientMaxPort: 27999}}
	if err := h.SetConfig(c, map[string]any{"engine": simBin}, nomad); err != nil {
		b.Fatal(err)
	}
	type shard struct {
		id, url string
		st      driver.TaskState
	}
	var shards []shard
	for i := range nodeShards {
		task, err := pluginhost.NewTask(b.TempDir(), pluginhost.TaskSpec{
			Name:  "shard" + strconv.Itoa(i),
			Ports: []*drivers.PortMapping{{Label: "http", Value: int32(netport.FreeTCP(b)), HostIp: "127.0.0.1"}},
			Env:   map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-node-" + strconv.Itoa(i)},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(task.Close)
		cfg := map[string]any{"model": "sim", "kv_events": true, "data_parallel_size": nodeRanks,
			"args": []string{"--sim-overhead=2ms", "--sim-prefill-per-token=0s", "--sim-inter-token-latency=1ms", "--num-gpu-blocks-override=512"}}
		if err := h.EncodeTaskConfig(c, task, cfg); err != nil {
			b.Fatal(err)
		}
		resp, err := h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
		if err != nil {
			b.Fatalf("start shard %d: %v", i, err)
		}
		var st driver.TaskState
		if err := json.Unmarshal(resp.GetHandle().GetDriverState(), &st); err != nil {
			b.Fatalf("shard %d's driver state: %v", i, err)
		}
		id := task.Config.GetId()
		b.Cleanup(func() {
			_, _ = h.Driver.StopTask(context.Background(), &drivers.StopTaskRequest{TaskId: id})
			_, _ = h.Driver.DestroyTask(context.Background(), &drivers.DestroyTaskRequest{TaskId: id, Force: true})
		})
		shards = append(shards, shard{id: id, url: engineURL(task), st: st})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: nodeClients}, Timeout: 30 * time.Second}
	for _, s := range shards {
		poll.Until(b, "shard "+s.id+" to serve", func() bool {
			resp, err := client.Get(s.url + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	batches := func() []uint64 {
		out := make([]uint64, len(shards))
		for i, s := range shards {
			r, err := h.Driver.InspectTask(c, &drivers.InspectTaskRequest{TaskId: s.id})
			if err != nil {
				b.Fatal(err)
			}
			out[i], _ = strconv.ParseUint(r.GetDriver().GetAttributes()["kv_batches"], 10, 64)
		}
		return out
	}
	for b.Loop() {
		ctx, cancel := context.WithCancel(c)
		var wg sync.WaitGroup
		var done, failed, tokens atomic.Int64
		for i, s := range shards {
			for j := range nodeClients {
				wg.Go(func() { drive(ctx, client, s.url, uint64(i*nodeClients+j), &done, &failed, &tokens) })
			}
		}
		// Measure once every shard's events flow.
		poll.Until(b, "every shard's KV events to reach the plugin", func() bool {
			return !slices.Contains(batches(), 0)
		})
		procs := []proc{{name: "plugin", pid: h.Pid()}}
		for i, s := range shards {
			procs = append(procs, proc{name: fmt.Sprintf("supervisor %d", i), pid: s.st.Supervisor.SupervisorPid},
				proc{name: fmt.Sprintf("engine %d", i), pid: s.st.Supervisor.EnginePid})
		}
		for i := range procs {
			procs[i].start(b)
		}
		b0, d0, k0, t0 := batches(), done.Load(), tokens.Load(), time.Now()
		time.Sleep(nodeWindow) // the measurement window itself, not a synchronisation
		b1, d1, k1, el := batches(), done.Load(), tokens.Load(), time.Since(t0)
		for i := range procs {
			procs[i].end(b, el)
		}
		cancel()
		wg.Wait()
		var total uint64
		for i := range b1 {
			if b1[i] == b0[i] {
				b.Errorf("shard %d took in no KV batches during the window", i)
			}
			total += b1[i] - b0[i]
		}
		if failed.Load() > 0 {
			b.Logf("%d completions failed", failed.Load())
		}
		// Every prompt is fresh, so each full block of it is stored once,
		// and with the cache full as many are evicted: two block events.
		report(b, procs, float64(total)/el.Seconds(), float64(d1-d0)/el.Seconds(), 2*float64(k1-k0)/16/el.Seconds())
	}
}

// drive posts completions of fresh prompts to url until ctx ends, adding
// each answer's prompt tokens to tokens.
func drive(ctx context.Context, c *http.Client, url string, seed uint64, done, failed, tokens *atomic.Int64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	words := make([]string, 160)
	for ctx.Err() == nil {
		for i := range words {
			words[i] = strconv.FormatUint(rng.Uint64N(1<<20), 36)
		}
		body, _ := json.Marshal(map[string]any{"model": "sim", "prompt": strings.Join(words, " "), "max_tokens": 2})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(body))
		if err != nil {
			failed.Add(1)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				failed.Add(1)
			}
			continue
		}
		var answer struct {
			Usage struct {
				PromptTokens int64 `json:"prompt_tokens"`
			} `json:"usage"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			failed.Add(1)
			continue
		}
		done.Add(1)
		tokens.Add(answer.Usage.PromptTokens / 16 * 16) // full blocks only
	}
}

// proc is one measured process: its CPU time at the window's start, and
// its CPU share and memory at the end.
type proc struct {
	name      string
	pid       int
	ticks0    int64
	cpuPct    float64 // of one core, over the window
	rss, peak int64   // kB
}

func (p *proc) start(b *testing.B) { p.ticks0 = cpuTicks(b, p.pid) }

func (p *proc) end(b *testing.B, window time.Duration) {
	p.cpuPct = float64(cpuTicks(b, p.pid)-p.ticks0) / clockTicks / window.Seconds() * 100
	p.rss, p.peak = memKB(b, p.pid, "VmRSS:"), memKB(b, p.pid, "VmHWM:")
}

// cpuTicks is utime+stime of pid from /proc/<pid>/stat.
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatalf("process %d: %v", pid, err)
	}
	// Fields after the command (which may hold spaces), from field 3.
	_, rest, ok := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		b.Fatalf("process %d: unreadable stat %q", pid, raw)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("process %d: stat times %q %q", pid, f[11], f[12])
	}
	return u + s
}

// memKB is a kB field of /proc/<pid>/status.
func memKB(b *testing.B, pid int, field string) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatalf("process %d: %v", pid, err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("process %d: %s %q", pid, field, v)
			}
			return n
		}
	}
	b.Fatalf("process %d: no %s in its status", pid, field)
	return 0
}

// report logs a table of the processes and reports the plugin's and the
// supervisors' figures as metrics.
func report(b *testing.B, procs []proc, batchesPerSec, completionsPerSec, blockEventsPerSec float64) {
	var t strings.Builder
	fmt.Fprintf(&t, "%d shards × %d ranks, %.0f KV batches/s into the plugin (about %.0f block events/s), %.0f completions/s\n",
		nodeShards, nodeRanks, batchesPerSec, blockEventsPerSec, completionsPerSec)
	fmt.Fprintf(&t, "| process | pid | CPU %% of a core | RSS MB | peak RSS MB |\n|---|---|---|---|---|\n")
	var supCPU, supRSS, supMaxCPU, engCPU float64
	var sups int
	for _, p := range procs {
		fmt.Fprintf(&t, "| %s | %d | %.1f | %.1f | %.1f |\n", p.name, p.pid, p.cpuPct, float64(p.rss)/1024, float64(p.peak)/1024)
		switch {
		case strings.HasPrefix(p.name, "supervisor"):
			sups++
			supCPU += p.cpuPct
			supRSS += float64(p.rss) / 1024
			supMaxCPU = max(supMaxCPU, p.cpuPct)
		case strings.HasPrefix(p.name, "engine"):
			engCPU += p.cpuPct
		}
	}
	b.Log("\n" + t.String())
	b.ReportMetric(batchesPerSec, "kv-batches/s")
	b.ReportMetric(completionsPerSec, "completions/s")
	b.ReportMetric(blockEventsPerSec, "block-events/s")
	b.ReportMetric(procs[0].cpuPct, "plugin-cpu-%")
	b.ReportMetric(float64(procs[0].rss)/1024, "plugin-rss-MB")
	b.ReportMetric(supCPU/float64(sups), "supervisor-cpu-%")
	b.ReportMetric(supMaxCPU, "supervisor-max-cpu-%")
	b.ReportMetric(supRSS/float64(sups), "supervisor-rss-MB")
	b.ReportMetric(engCPU, "engines-cpu-%")
}
