package e2e

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/llmgw/llmgw/router/config"
)

// TestReplicaDiesMidStream kills a simulator while it streams through the
// router: the client gets the events sent so far, then an OpenAI error
// event and [DONE], and the router keeps serving.
func TestReplicaDiesMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	s := startSim(t, "--sim-latency=true", "--sim-inter-token-latency", "20ms")
	c := routerConfig("")
	c.Replicas = []config.StaticReplica{{ID: "a/main", Model: model, Address: s.addr, BlockSize: 16}}
	r := startRouter(t, c)
	// ignore_eos: vllm-sim would end the stream at a simulated EOS, here
	// 17 tokens in (a third of a second), which a loaded machine can let
	// pass before the kill lands; 500 tokens take 10 s.
	resp, err := http.Post("http://"+r.Addr()+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","prompt":"tell a long story","max_tokens":500,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the first event: %v", err)
		}
		if strings.HasPrefix(line, "data: {") {
			break
		}
	}
	if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("read after the replica died: %v", err)
	}
	tail := string(rest)
	if !strings.Contains(tail, "failed mid-stream") || !strings.HasSuffix(tail, "data: [DONE]\n\n") {
		t.Errorf("stream tail %q; want an error event and [DONE]", tail[max(0, len(tail)-300):])
	}
	// The router survives; with its only replica gone it answers 502.
	a := call(t, r.Addr(), "/v1/completions", completion("hello", false))
	if a.code != http.StatusBadGateway || !strings.Contains(string(a.body), "no replica answered") {
		t.Errorf("after the replica died: %d %s; want 502", a.code, a.body)
	}
}
