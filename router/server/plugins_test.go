package server_test

// An embedding program's view: a scheduler plugin defined here, with only
// the exported scheduler API, registered through server.WithPlugins and
// named in the HCL scheduler block.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// preferScorer scores one named replica 1 and every other 0.
type preferScorer struct {
	name    scheduler.TypedName
	replica string
}

func (s *preferScorer) TypedName() scheduler.TypedName { return s.name }

func (s *preferScorer) Score(_ context.Context, _ *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	for i := range cands {
		if cands[i].ID == s.replica {
			scores[i] = 1
		}
	}
}

func registerPrefer(r *scheduler.Registry) error {
	return r.Register("prefer-replica", func(n scheduler.TypedName, raw json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
		var p struct {
			Replica string `json:"replica"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
		if p.Replica == "" {
			return nil, errors.New("params: replica is required")
		}
		return &preferScorer{name: n, replica: p.Replica}, nil
	})
}

const preferHCL = `
scheduler {
  filter "model" {}
  filter "healthy" {}
  scorer "load" {
    weight = 1
  }
  scorer "prefer-replica" {
    weight = 2
    params = { replica = "c/1" }
  }
  picker "max-score" {}
}
`

// fleet is three replica HTTP servers serving model m, counting the chat
// completions each receives.
type fleet struct {
	mu   sync.Mutex
	hits map[string]int
	cfg  []config.StaticReplica
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{hits: map[string]int{}}
	for _, id := range []string{"a/1", "b/1", "c/1"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/chat/completions" {
				http.NotFound(w, r)
				return
			}
			f.mu.Lock()
			f.hits[id]++
			f.mu.Unlock()
			io.WriteString(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
		}))
		t.Cleanup(srv.Close)
		f.cfg = append(f.cfg, config.StaticReplica{ID: id, Model: "m", Address: srv.Listener.Addr().String(), BlockSize: 16})
	}
	return f
}

func (f *fleet) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for id, n := range f.hits {
		out[id] = n
	}
	return out
}

func routerConfig(t *testing.T, f *fleet, hcl string) config.Config {
	t.Helper()
	c := config.Default()
	c.Listen, c.IngestListen, c.HTTP.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.Replicas = f.cfg
	if hcl != "" {
		if err := c.ParseHCL([]byte(hcl), "router.hcl"); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// send posts n chat completions with distinct prompts, each of which must
// succeed.
func send(t *testing.T, addr string, n int) {
	t.Helper()
	for i := range n {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"request %d"}]}`, i)
		resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
}

// TestOutsidePluginRoutes: a scorer registered with WithPlugins and named
// in the HCL scheduler block routes every request to the replica it
// prefers, where the default policy spreads requests that hit no cache
// over the idle replicas.
func TestOutsidePluginRoutes(t *testing.T) {
	const n = 30
	t.Run("outside plugin", func(t *testing.T) {
		f := newFleet(t)
		s, err := server.Start(context.Background(), routerConfig(t, f, preferHCL), nil, server.WithPlugins(registerPrefer))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		send(t, s.Addr(), n)
		if got := f.counts(); got["c/1"] != n || len(got) != 1 {
			t.Errorf("replica hits %v; want all %d on c/1", got, n)
		}
	})
	// The contrast: with the default policy, 30 requests landing on one
	// replica would take a (1/3)^29 chance.
	t.Run("default policy", func(t *testing.T) {
		f := newFleet(t)
		s, err := server.Start(context.Background(), routerConfig(t, f, ""), nil, server.WithPlugins(registerPrefer))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		send(t, s.Addr(), n)
		if got := f.counts(); len(got) < 2 {
			t.Errorf("replica hits %v; want requests spread over replicas", got)
		}
	})
}

// TestPluginErrors: a config naming a plugin nobody registered, a plugin
// type registered twice and a plugin's bad params each fail Start with an
// error that says so.
func TestPluginErrors(t *testing.T) {
	f := newFleet(t)
	tests := []struct {
		name string
		hcl  string
		opts []server.Option
		want string
	}{
		{"not registered", preferHCL, nil, `unknown plugin type "prefer-replica"`},
		{"registered twice", preferHCL, []server.Option{server.WithPlugins(registerPrefer), server.WithPlugins(registerPrefer)},
			`type "prefer-replica" already registered`},
		{"over a builtin", preferHCL, []server.Option{server.WithPlugins(func(r *scheduler.Registry) error {
			return r.Register("load", func(scheduler.TypedName, json.RawMessage, scheduler.Deps) (scheduler.Plugin, error) { return nil, nil })
		})}, `type "load" already registered`},
		{"bad params", strings.Replace(preferHCL, `replica = "c/1"`, `replicas = "c/1"`, 1),
			[]server.Option{server.WithPlugins(registerPrefer)}, `unknown field "replicas"`},
		{"nil register", preferHCL, []server.Option{server.WithPlugins(nil)}, "WithPlugins(nil)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := server.Start(context.Background(), routerConfig(t, f, tc.hcl), nil, tc.opts...)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want an error containing %s", err, tc.want)
			}
		})
	}
}
