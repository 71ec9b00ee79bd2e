package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/oracle"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

var sims simproc.Shared

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { sims.Remove() }))
}

// startSim runs a vllm-sim serving "sim-model", with extra flags; the
// client talks to it as it would to a router (both serve OpenAI's API).
func startSim(t *testing.T, extra ...string) *simproc.Proc {
	t.Helper()
	bin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: bin,
		Args: append([]string{"sim-model", "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--seed", "1",
			"--enable-prompt-tokens-details"}, extra...),
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// deadURL is a loopback address nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

func TestRunMeasuresAndRetriesPastDeadRouter(t *testing.T) {
	sim := startSim(t)
	w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 2, PerGroup: 4, PrefixTokens: 96, SuffixTokens: 20, OutputTokens: 6, Rate: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Routers: Static{deadURL(t), sim.URL}, Model: "sim-model"})
	defer c.Close()
	var done atomic.Int32
	results := c.Run(context.Background(), w.Requests, func(Result) { done.Add(1) })
	if int(done.Load()) != len(w.Requests) {
		t.Errorf("onDone called %d times; want %d", done.Load(), len(w.Requests))
	}
	toks, err := Tokenize(context.Background(), http.DefaultClient, sim.URL, "sim-model", w.Requests, 2)
	if err != nil {
		t.Fatal(err)
	}
	bound := oracle.Reusable(toks, 16)
	retried, cached, reusable := 0, 0, 0
	for i, r := range results {
		if !r.OK() || r.Router != sim.URL {
			t.Fatalf("request %d: status %d err %q via %s; want 200 via the live router", i, r.Status, r.Err, r.Router)
		}
		if r.PromptTokens != len(toks[i]) || r.OutputTokens != 6 || len(r.ITL) != 5 {
			t.Errorf("request %d: %d prompt tokens, %d output, %d gaps; want %d, 6, 5", i, r.PromptTokens, r.OutputTokens, len(r.ITL), len(toks[i]))
		}
		if r.TTFT <= 0 || r.E2E < r.TTFT || r.CachedTokens%16 != 0 {
			t.Errorf("request %d: ttft %v e2e %v cached %d", i, r.TTFT, r.E2E, r.CachedTokens)
		}
		if r.Attempts > 1 {
			retried++
		}
		cached += r.CachedTokens
		reusable += bound[i]
	}
	if retried == 0 {
		t.Error("no request was retried, though half the rotation is a dead router")
	}
	// One engine sees every request: it can reuse at most what the oracle
	// allows, and all of it when requests do not overlap in time.
	if cached > reusable || cached == 0 {
		t.Errorf("engine reused %d tokens; oracle allows %d", cached, reusable)
	}
}

// TestEngineRejectionIsNotShedding: a prompt over the engine's
// max_model_len gets the engine's 400 at once. That is a rejection, not
// load shedding: it is tried once, not on every router, and Rejected says
// so.
func TestEngineRejectionIsNotShedding(t *testing.T) {
	sim := startSim(t, "--max-model-len", "256")
	w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 1, PerGroup: 3, PrefixTokens: 400, SuffixTokens: 20, OutputTokens: 6, Rate: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Routers: Static{sim.URL, sim.URL}, Model: "sim-model"})
	defer c.Close()
	for i, r := range c.Run(context.Background(), w.Requests, nil) {
		if r.OK() || !r.Rejected() || r.Status != 400 {
			t.Errorf("request %d: status %d, ok %v, rejected %v; want the engine's 400, rejected", i, r.Status, r.OK(), r.Rejected())
		}
		if r.Attempts != 1 {
			t.Errorf("request %d: %d attempts; a rejection is final, want 1", i, r.Attempts)
		}
		if !strings.Contains(r.Err, "maximum context length is 256 tokens") {
			t.Errorf("request %d: error %q; want the engine's message", i, r.Err)
		}
	}
	for _, st := range []int{200, 408, 429, 500, 502} {
		if r := (Result{Status: st}); r.Rejected() {
			t.Errorf("status %d counted as rejected", st)
		}
	}
}

func TestKilledRouterLosesOnlyStartedRequests(t *testing.T) {
	a, b := startSim(t), startSim(t)
	w, err := workload.Siblings(workload.SiblingOptions{Prompts: 40, Samples: 1, PromptTokens: 40, OutputTokens: 30, Rate: 20, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Routers: Static{a.URL, b.URL}, Model: "sim-model"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	killed := make(chan struct{})
	var n atomic.Int32
	results := c.Run(ctx, w.Requests, func(Result) {
		if n.Add(1) == 3 {
			_ = syscall.Kill(a.Pid(), syscall.SIGKILL)
			close(killed)
		}
	})
	<-killed
	<-a.Done()
	afterKill := 0
	for i, r := range results {
		switch {
		case r.OK():
			if r.Router == b.URL && r.Attempts > 1 {
				afterKill++
			}
		case r.Started:
			// Streaming when its router died: counted, not retried.
		default:
			t.Errorf("request %d lost before streaming: status %d, %q after %d attempts", i, r.Status, r.Err, r.Attempts)
		}
	}
	if afterKill == 0 {
		t.Error("no request was retried on the surviving router after the kill")
	}
}

func TestConsulDNS(t *testing.T) {
	agent := consultest.Start(t)
	reg := func(id string, port int) {
		t.Helper()
		err := agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: id, Name: RouterService, Port: port, Address: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
	}
	reg("r1", 18001)
	reg("r2", 18002)
	d := &ConsulDNS{Addr: agent.DNSAddr, TTL: time.Hour}
	var got []string
	var err error
	if !poll.Within(poll.Timeout, func() bool {
		if got, err = d.Routers(context.Background()); err == nil && len(got) == 2 {
			return true
		}
		d.Forget()
		return false
	}) {
		t.Fatalf("routers from DNS: %v %v; want two", got, err)
	}
	joined := strings.Join(got, " ")
	for _, p := range []int{18001, 18002} {
		if !strings.Contains(joined, fmt.Sprintf("http://127.0.0.1:%d", p)) {
			t.Errorf("routers %v lack port %d", got, p)
		}
	}
	// Answers are cached until forgotten.
	if err := agent.Client.Agent().ServiceDeregister("r2"); err != nil {
		t.Fatal(err)
	}
	if again, _ := d.Routers(context.Background()); len(again) != 2 {
		t.Errorf("cached answer changed to %v", again)
	}
	d.Forget()
	if again, err := d.Routers(context.Background()); err != nil || len(again) != 1 {
		t.Errorf("after Forget: %v %v; want one router", again, err)
	}
	bad := &ConsulDNS{Addr: agent.DNSAddr, Service: "no-such-service"}
	if _, err := bad.Routers(context.Background()); err == nil || !strings.Contains(err.Error(), "no-such-service.service.consul") {
		t.Errorf("unknown service: %v; want an error naming it", err)
	}
}
