package sdk_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw-router/routertest"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

const (
	chatModel  = "sim-model"
	embedModel = "sim-embed"
	// apiKey is the one client key both routers accept; every SDK sends
	// it, as a bearer token or (Anthropic's) in x-api-key.
	apiKey    = "sk-llmgw-sdk-test"
	kvToken   = "sdk-test-kv-token"
	peerToken = "sdk-test-peer-token"
)

// sims builds vllm-sim once ($LLMGW_VLLM_SIM_BIN overrides it); routers
// builds llmgw-router once ($LLMGW_ROUTER_BIN overrides it).
var (
	sims    simproc.Shared
	routers routertest.Build
)

func TestMain(m *testing.M) {
	code := m.Run()
	sims.Remove()
	routers.Remove()
	os.Exit(code)
}

// fleet is what the SDKs talk to: two routers over the same replicas.
type fleet struct {
	a, b *router
	// chatSim serves the chat model; embedSim the embedding model, nil
	// when this vllm-sim has no pooling runner (noPooling says why).
	chatSim, embedSim *simproc.Proc
	noPooling         string
}

// startFleet starts two chat replicas, an embedding replica when vllm-sim
// can run one, a Consul agent, and two routers registered in it with
// peer sharing on, and waits until each router counts the other.
func startFleet(t *testing.T) *fleet {
	t.Helper()
	simBin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{}
	var replicas []string
	for i := range 2 {
		p := startSim(t, simBin, chatModel)
		if i == 0 {
			f.chatSim = p
		}
		replicas = append(replicas, replicaBlock(fmt.Sprintf("chat-%d/main", i), chatModel, p, ""))
	}
	if f.noPooling = poolingSupport(t, simBin); f.noPooling == "" {
		f.embedSim = startSim(t, simBin, embedModel, "--runner", "pooling")
		replicas = append(replicas, replicaBlock("embed-0/main", embedModel, f.embedSim, `task = "embed"`))
	}
	agent := consultest.Start(t)
	bin := routers.Binary(t)
	src := routerHCL(agent.Addr, f.embedSim != nil, replicas)
	f.a, f.b = &router{routertest.Start(t, bin, src)}, &router{routertest.Start(t, bin, src)}
	for _, r := range []*router{f.a, f.b} {
		poll.Until(t, "each router counting the other as its peer", func() bool {
			return r.metricsHave("llmgw_peer_routers 1")
		})
	}
	return f
}

// startSim runs vllm-sim serving model, without its latency model, until
// the test ends.
func startSim(t *testing.T, bin, model string, args ...string) *simproc.Proc {
	t.Helper()
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: bin,
		Args:   append([]string{model, "--host", "127.0.0.1", "--port", "0", "--sim-latency=false", "--seed", "1"}, args...),
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// poolingSupport says why vllm-sim cannot serve an embedding model, or
// "" when its help lists vLLM's --runner flag (pooling models).
func poolingSupport(t *testing.T, bin string) string {
	t.Helper()
	out, _ := exec.Command(bin, "serve", "-h").CombinedOutput()
	if !bytes.Contains(out, []byte("--runner")) {
		return "vllm-sim has no --runner pooling yet (vllm-sim serve -h lists no --runner)"
	}
	return ""
}

// replicaBlock is a static replica's block, with extra attributes.
func replicaBlock(id, model string, p *simproc.Proc, extra string) string {
	return fmt.Sprintf("replica %q {\n  model = %q\n  address = %q\n  block_size = 16\n  %s\n}\n", id, model, strings.TrimPrefix(p.URL, "http://"), extra)
}

// routerHCL is both routers' configuration: loopback listeners on free
// ports, the one client key, static replicas, and Consul for finding the
// other router (it watches no replica service).
func routerHCL(consulAddr string, embed bool, replicas []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `listen = "127.0.0.1:0"
ingest_listen = "127.0.0.1:0"
admin_listen = "127.0.0.1:0"
kv_token = %q
peer_token = %q
api_keys = [%q]
expose_route_headers = true
peer_load_interval = "50ms"
log_level = "info"
consul {
  address = %q
  services = []
  register = true
  check_interval = "1s"
}
model %q {
  sim = true
}
`, kvToken, peerToken, apiKey, consulAddr, chatModel)
	if embed {
		fmt.Fprintf(&sb, "model %q {\n  sim = true\n}\n", embedModel)
	}
	for _, r := range replicas {
		sb.WriteString(r)
	}
	return sb.String()
}

// router is a running llmgw-router process.
type router struct{ *routertest.Router }

// base is the router's root URL, as the SDKs take it.
func (r *router) base() string { return "http://" + r.API }

// metricsHave reports whether the router's /metrics holds line.
func (r *router) metricsHave(line string) bool {
	resp, err := http.Get("http://" + r.Admin + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return bytes.Contains(b, []byte(line))
}
