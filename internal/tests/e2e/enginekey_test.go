package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

const engineKey = "engine-secret"

// lockedBuffer collects a router's log lines for a test to read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// keyedCall posts body to the router's path with the client's own
// Authorization header.
func keyedCall(t *testing.T, r *server.Server, path, body, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.Addr()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// routerModels lists the router's /v1/models ids.
func routerModels(t *testing.T, r *server.Server) []string {
	t.Helper()
	resp, err := http.Get("http://" + r.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestEngineAPIKey runs a vllm-sim that wants an API key (VLLM_API_KEY, as
// a Nomad template would set it) and serves a LoRA adapter, found through
// Consul by real routers. With engine_api_key the router completes chat
// requests whatever the client's own Authorization says, and keeps the
// replica's adapter listed; without it, or with a wrong one, the client gets
// a 502 that names the option instead of the engine's 401, the router warns
// about the model listing, and the client's own bearer token (even the
// engine's key) is never passed on.
func TestEngineAPIKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	agent := consultest.Start(t)
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: simBinary(t),
		Args: []string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--seed", "1",
			"--sim-latency=false", "--enable-lora", "--lora-modules", adapter + "=/loras/sql"},
		Env: []string{"VLLM_API_KEY=" + engineKey},
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	s := &sim{Proc: p, addr: strings.TrimPrefix(p.URL, "http://")}
	const id = "alloc-key/main"
	registerReplica(t, agent.Client, id, s, false)

	newRouter := func(serviceID string, set func(c *config.Config)) (*server.Server, *lockedBuffer) {
		c := routerConfig("")
		c.Consul.Address, c.Consul.Services, c.Consul.ServiceID = agent.Addr, []string{"vllm"}, serviceID
		set(&c)
		logs := &lockedBuffer{}
		return startRouterLogTo(t, c, logs), logs
	}
	chat := `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}],"max_tokens":3}`

	t.Run("with the key", func(t *testing.T) {
		r, logs := newRouter("router-keyed", func(c *config.Config) { c.EngineAPIKey = engineKey })
		poll.Until(t, "the adapter from the keyed replica's model listing", func() bool {
			reps := r.Replicas().ForModel(adapter)
			return len(reps) == 1 && reps[0].ID == id
		})
		if ids := routerModels(t, r); !strings.Contains(strings.Join(ids, ","), adapter) {
			t.Errorf("router /v1/models lists %v; want the adapter %s", ids, adapter)
		}
		for _, auth := range []string{"", "Bearer tenant-key", "Bearer " + engineKey} {
			if code, body := keyedCall(t, r, "/v1/chat/completions", chat, auth); code != 200 {
				t.Errorf("chat with client Authorization %q: %d %s; want 200", auth, code, body)
			}
		}
		adapterChat := strings.Replace(chat, `"`+model+`"`, `"`+adapter+`"`, 1)
		if code, body := keyedCall(t, r, "/v1/chat/completions", adapterChat, "Bearer tenant-key"); code != 200 {
			t.Errorf("adapter chat: %d %s; want 200", code, body)
		}
		if l := logs.String(); strings.Contains(l, "refused") || strings.Contains(l, engineKey) {
			t.Errorf("router log mentions a refusal or the key:\n%s", l)
		}
	})

	for _, tt := range []struct {
		name, serviceID, key, want string
	}{
		{"without a key", "router-unkeyed", "", "set engine_api_key for model " + model},
		{"with a wrong key", "router-wrong", "not-it", "engine_api_key for model " + model + " does not match"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, logs := newRouter(tt.serviceID, func(c *config.Config) { c.ModelKeys = map[string]string{model: tt.key} })
			poll.Until(t, "the warning about the refused model listing", func() bool {
				return strings.Contains(logs.String(), "refused the router's engine key on its model listing")
			})
			if reps := r.Replicas().ForModel(adapter); len(reps) != 0 {
				t.Errorf("the adapter is routed to %v although its listing was refused", reps)
			}
			// The client's bearer token is the engine's key: passed on, it
			// would be accepted.
			poll.Until(t, "the replica routable", func() bool { return len(r.Replicas().ForModel(model)) == 1 })
			code, body := keyedCall(t, r, "/v1/chat/completions", chat, "Bearer "+engineKey)
			if code != http.StatusBadGateway || !strings.Contains(body, tt.want) || !strings.Contains(body, id) {
				t.Errorf("chat: %d %s; want 502 naming the replica and %q", code, body, tt.want)
			}
			if l := logs.String(); !strings.Contains(l, tt.want) {
				t.Errorf("router log lacks %q:\n%s", tt.want, l)
			} else if strings.Contains(l, "not-it") || strings.Contains(l, engineKey) {
				t.Errorf("router log shows a key:\n%s", l)
			}
		})
	}
}
