package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// sims builds vllm-sim from this tree once per test process (a bin/vllm-sim
// left by an earlier build could be stale); TestMain removes it.
var sims simproc.Shared

func simBinary(t *testing.T) string {
	t.Helper()
	p, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// simProcess is one running vllm-sim.
type simProcess struct {
	*simproc.Proc
	t *testing.T
}

// startSim starts vllm-sim with args after "serve MODEL", waits until it
// serves and answers /health, and stops it (SIGTERM, then reaped) in
// cleanup.
func startSim(t *testing.T, args ...string) *simProcess {
	t.Helper()
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: simBinary(t),
		Args:   append([]string{"sim-model", "--host", "127.0.0.1", "--port", "0", "--sim-latency=false", "--seed", "1"}, args...),
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	poll.Until(t, "vllm-sim /health", func() bool {
		resp, err := http.Get(p.URL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return &simProcess{Proc: p, t: t}
}

// stop ends the process and reaps it; safe to call twice.
func (p *simProcess) stop() { p.Stop() }

func (p *simProcess) post(path string, body any, out any) {
	p.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		p.t.Fatal(err)
	}
	resp, err := http.Post(p.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		p.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		p.t.Fatalf("POST %s: %s: %s", path, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// complete sends one completion request.
func (p *simProcess) complete(prompt string) {
	p.t.Helper()
	if err := p.tryComplete(prompt); err != nil {
		p.t.Fatal(err)
	}
}

// tryComplete sends one completion request; safe from any goroutine.
func (p *simProcess) tryComplete(prompt string) error {
	b, err := json.Marshal(map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 20, "temperature": 0})
	if err != nil {
		return err
	}
	resp, err := http.Post(p.URL+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("completion: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("completion: %s: %s", resp.Status, data)
	}
	return nil
}

// dump reads the simulator's ground truth: every block its caches hold.
func (p *simProcess) dump() []simproc.Block {
	p.t.Helper()
	d, err := simproc.ReadDump(p.t.Context(), p.URL)
	if err != nil {
		p.t.Fatal(err)
	}
	return d.Blocks
}

// prompts returns a workload: n prompts over a few shared prefixes, long
// enough to fill several blocks each.
func prompts(n, seed int) []string {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly hex " +
		"every jovial boxer and the market for cached prefixes grows with each request that shares a system prompt")
	out := make([]string, n)
	for i := range out {
		var sb strings.Builder
		prefix := (i + seed) % 3
		for j := range 40 {
			sb.WriteString(words[(prefix*7+j)%len(words)])
			sb.WriteByte(' ')
		}
		for j := range 30 + i%20 {
			sb.WriteString(words[(i*13+seed*5+j*j)%len(words)])
			sb.WriteByte(' ')
		}
		out[i] = sb.String()
	}
	return out
}
