package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

const model = "sim-model"

// sims builds vllm-sim from this tree once per test process
// ($LLMGW_VLLM_SIM_BIN overrides it).
var sims simproc.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	sims.Remove()
	os.Exit(code)
}

func simBinary(t *testing.T) string {
	t.Helper()
	p, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type sim struct {
	*simproc.Proc
	addr string // host:port
}

// startSim runs `vllm-sim serve sim-model` with args on a free port and
// stops and reaps it when the test ends. It passes
// --enable-prompt-tokens-details, as the driver does, so answers report
// their cached tokens; args may turn it off with its --no- form.
func startSim(t *testing.T, args ...string) *sim {
	t.Helper()
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: simBinary(t),
		Args: append([]string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--seed", "1",
			"--enable-prompt-tokens-details"}, args...),
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &sim{Proc: p, addr: strings.TrimPrefix(p.URL, "http://")}
}

// metric reads one unlabelled series from the simulator's /metrics.
func (s *sim) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sum := 0.0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// routerConfig is a router on free loopback ports with the simulator's
// tokenizer for sim-model. A router given the drivers' token also gets a
// peer token of its own, so that routers share their loads where peer
// sharing is on.
func routerConfig(token string) config.Config {
	c := config.Default()
	c.Listen, c.IngestListen, c.HTTP.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.HTTP.ExposeRouteHeaders = true // the tests read where each request went
	c.KVToken = token
	if token != "" {
		c.PeerToken = "peers-" + token
	}
	c.Models = map[string]config.Model{model: {Sim: true}}
	c.ScrapeInterval = 200 * time.Millisecond
	c.LogLevel = "debug"
	return c
}

func startRouter(t *testing.T, c config.Config, opts ...server.Option) *server.Server {
	t.Helper()
	return startRouterLogTo(t, c, testWriter{t}, opts...)
}

// startRouterLogTo is startRouter with the router's warnings written to out.
func startRouterLogTo(t *testing.T, c config.Config, out io.Writer, opts ...server.Option) *server.Server {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "router", Level: hclog.Warn, Output: out})
	s, err := server.Start(context.Background(), c, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// answer is a routed response: status, routing headers and body.
type answer struct {
	code    int
	replica string
	mode    string
	cached  int
	body    []byte
}

func call(t *testing.T, router, path, body string) answer {
	t.Helper()
	resp, err := http.Post("http://"+router+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	cached, _ := strconv.Atoi(resp.Header.Get("X-Llmgw-Cached-Tokens"))
	return answer{code: resp.StatusCode, replica: resp.Header.Get("X-Llmgw-Replica"), mode: resp.Header.Get("X-Llmgw-Routing-Mode"), cached: cached, body: b}
}

// explain asks the router where a request would go, without sending it.
type explanation struct {
	PromptTokens int `json:"prompt_tokens"`
	Chosen       struct {
		Replica      string `json:"replica"`
		Mode         string `json:"mode"`
		CachedTokens int    `json:"cached_tokens"`
	} `json:"chosen"`
}

func explain(t *testing.T, router, body string) explanation {
	t.Helper()
	return explainAt(t, router, "/admin/explain/completions", body)
}

// explainChat is explain for a chat completion's body.
func explainChat(t *testing.T, router, body string) explanation {
	t.Helper()
	return explainAt(t, router, "/admin/explain/chat", body)
}

func explainAt(t *testing.T, router, path, body string) explanation {
	t.Helper()
	resp, err := http.Post("http://"+router+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e explanation
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

// longPrompt is a distinct prompt of several hundred tokens.
func longPrompt(seed int) string {
	var sb strings.Builder
	for i := range 150 {
		fmt.Fprintf(&sb, "w%d_%d ", seed, i)
	}
	return sb.String()
}

func completion(prompt string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 4, "stream": stream})
	return string(b)
}

// cachedTokens reads usage.prompt_tokens_details.cached_tokens.
func cachedTokens(t *testing.T, body []byte) int {
	t.Helper()
	var r struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response %s: %v", body, err)
	}
	return r.Usage.Details.Cached
}

func asError[T error](err error, target *T) bool { return errors.As(err, target) }
