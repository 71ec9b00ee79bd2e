package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
)

// The test binary doubles as vllm-sim: started with VLLM_SIM_MAIN=1 it runs
// main, so every test drives the real command as a separate process, the
// way the driver launches it.
func TestMain(m *testing.M) {
	if os.Getenv("VLLM_SIM_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// proc is a running simulator.
type proc struct{ *simproc.Proc }

// startSim runs `vllm-sim serve sim-model` on a free loopback port with the
// given extra flags and waits until it serves. The process is stopped with
// SIGTERM and reaped when the test ends.
func startSim(t *testing.T, env []string, args ...string) proc {
	t.Helper()
	p := startProc(t, env, append([]string{"sim-model", "--host", "127.0.0.1", "--port", "0", "--sim-latency=false"}, args...)...)
	if err := p.WaitReady(context.Background(), serveWait(t)); err != nil {
		t.Fatal(err)
	}
	return p
}

// serveWait is how long startSim waits for a simulator to serve: for as
// long as it runs (WaitReady returns as soon as it exits) and the test has
// time left, less stopMargin to stop it and report. A fixed budget cannot
// fit every machine: on the 2-core build machine at a load average of 20
// to 30, loading a real 11 MB tokenizer.json took 4 s in a plain build and
// over two minutes in this -race test binary.
// Without a test deadline (-timeout 0) it is noDeadlineWait.
func serveWait(t *testing.T) time.Duration {
	d, ok := t.Deadline()
	if !ok {
		return noDeadlineWait
	}
	return max(time.Until(d)-stopMargin, time.Second)
}

const (
	stopMargin     = 30 * time.Second
	noDeadlineWait = 10 * time.Minute
)

// startProc launches this test binary as vllm-sim with args after `serve`,
// without waiting for it to serve; the test's cleanup stops and reaps it.
func startProc(t *testing.T, env []string, args ...string) proc {
	t.Helper()
	p, err := simproc.Launch(simproc.Options{Binary: os.Args[0], Args: args, Env: append([]string{"VLLM_SIM_MAIN=1"}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.StopWithin(15 * time.Second) {
			t.Errorf("vllm-sim ignored SIGTERM for 15s:\n%s", p.Output())
		}
	})
	return proc{p}
}

// post sends a JSON body and decodes the JSON answer into out (if not nil),
// returning the status.
func post(t *testing.T, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	resp, err := http.Post(url, "application/json", rd)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("decode %s answer %q: %v", url, data, err)
		}
	}
	return resp.StatusCode
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type completion struct {
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usageJSON `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func complete(t *testing.T, p proc, prompt string, maxTokens int) completion {
	t.Helper()
	var c completion
	if st := post(t, p.URL+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": maxTokens}, &c); st != 200 {
		t.Fatalf("completion: status %d: %+v", st, c.Error)
	}
	return c
}

// words makes a prompt of n distinct words starting at word k.
func words(k, n int) string {
	var sb strings.Builder
	for i := k; i < k+n; i++ {
		fmt.Fprintf(&sb, "w%d ", i)
	}
	return sb.String()
}
