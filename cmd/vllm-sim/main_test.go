package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
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
type proc struct {
	url  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

var uvicorn = regexp.MustCompile(`Uvicorn running on (http://\S+)`)

// startSim runs `vllm-sim serve sim-model` on a free loopback port with the
// given extra flags and waits until it serves. The process is stopped with
// SIGTERM and reaped when the test ends.
func startSim(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	argv := append([]string{"serve", "sim-model", "--host", "127.0.0.1", "--port", "0", "--sim-latency=false"}, args...)
	p := startProc(t, env, argv...)
	deadline := time.After(30 * time.Second)
	for p.url == "" {
		select {
		case <-p.done:
			t.Fatalf("vllm-sim exited before serving:\n%s", p.output())
		case <-deadline:
			t.Fatalf("vllm-sim did not serve within 30s:\n%s", p.output())
		case <-time.After(10 * time.Millisecond):
			p.mu.Lock()
			if m := uvicorn.FindStringSubmatch(p.logs.String()); m != nil {
				p.url = m[1]
			}
			p.mu.Unlock()
		}
	}
	return p
}

func startProc(t *testing.T, env []string, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Env = append(append(os.Environ(), "VLLM_SIM_MAIN=1"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("vllm-sim ignored SIGTERM for 15s:\n%s", p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

func complete(t *testing.T, p *proc, prompt string, maxTokens int) completion {
	t.Helper()
	var c completion
	if st := post(t, p.url+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": maxTokens}, &c); st != 200 {
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
