package layering

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// contracts lists, for packages whose package comment promises a narrow set
// of dependencies, every non-standard import allowed in their non-test
// files. One table keeps every promise visible in one place; a package not
// listed here is bound only by TestLayering's rules.
var contracts = map[string][]string{
	"consul":                    {"github.com/hashicorp/consul/api", "github.com/hashicorp/go-hclog"},
	"nomad":                     {"github.com/hashicorp/go-hclog", "github.com/hashicorp/nomad/api", "github.com/llmgw/llmgw/consul"},
	"nomad/nomadtest":           {"github.com/hashicorp/nomad/api"},
	"cmd/llmgw/internal/status": {"github.com/hashicorp/consul/api", "github.com/llmgw/llmgw/consul"},
	"router/config": {
		"github.com/hashicorp/hcl/v2",
		"github.com/hashicorp/hcl/v2/gohcl",
		"github.com/hashicorp/hcl/v2/hclsyntax",
		"github.com/zclconf/go-cty/cty",
		"github.com/zclconf/go-cty/cty/json",
		"github.com/llmgw/llmgw/router/autoscale",
		"github.com/llmgw/llmgw/router/scheduler",
	},
	"router/enginemetrics": {"github.com/hashicorp/go-hclog"},
	"router/peers/peerbench": {
		"github.com/llmgw/llmgw/router/peers",
		"github.com/llmgw/llmgw/router/load",
		"github.com/llmgw/llmgw/router/ratelimit",
	},
	"driver/kvevents": {
		"github.com/llmgw/llmgw/internal/blockkey",
		"github.com/llmgw/llmgw/internal/kvwire",
	},
	"driver/lograte": nil,
	"driver/kvevents/intake": {
		"github.com/hashicorp/go-hclog",
		"github.com/pebbe/zmq4",
		"github.com/llmgw/llmgw/driver/kvevents",
		"github.com/llmgw/llmgw/driver/lograte",
		"github.com/llmgw/llmgw/internal/blockkey",
		"github.com/llmgw/llmgw/internal/kvwire",
	},
	"driver/kvevents/forward": {
		"github.com/hashicorp/go-hclog",
		"github.com/llmgw/llmgw/consul",
		"github.com/llmgw/llmgw/driver/kvevents",
		"github.com/llmgw/llmgw/driver/lograte",
		"github.com/llmgw/llmgw/internal/kvwire",
	},
	"router/admission": {
		"github.com/prometheus/client_golang/prometheus",
		"github.com/llmgw/llmgw/router/tenant",
	},
	"router/gateway": {
		"github.com/gin-gonic/gin",
		"github.com/hashicorp/go-hclog",
		"github.com/prometheus/client_golang/prometheus",
		"github.com/prometheus/client_golang/prometheus/collectors",
		"github.com/prometheus/client_golang/prometheus/promhttp",
		"github.com/llmgw/llmgw/router/admission", // the priority header's name
		"github.com/llmgw/llmgw/router/anthropic", // Messages bodies and errors
		"github.com/llmgw/llmgw/router/disagg",    // the P/D transport's bodies
		"github.com/llmgw/llmgw/router/migrate",   // migration's streams
		"github.com/llmgw/llmgw/router/openai",
		"github.com/llmgw/llmgw/router/respstore", // Responses conversations
		"github.com/llmgw/llmgw/router/responses", // Responses bodies
		"github.com/llmgw/llmgw/router/route",
		"github.com/llmgw/llmgw/router/tenant",
		"github.com/llmgw/llmgw/router/tracing", // spans and W3C trace context
		"go.opentelemetry.io/otel/attribute",
		"go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/semconv/v1.40.0",
		"go.opentelemetry.io/otel/trace",
	},
	// The planner: every routing decision, whichever API asked for it.
	"router/route": {
		"github.com/hashicorp/go-hclog",
		"github.com/prometheus/client_golang/prometheus",
		"github.com/llmgw/llmgw/router/admission",
		"github.com/llmgw/llmgw/router/autoscale", // the TTFT target's default
		"github.com/llmgw/llmgw/router/disagg",
		"github.com/llmgw/llmgw/router/load",
		"github.com/llmgw/llmgw/router/openai",
		"github.com/llmgw/llmgw/router/prompt",
		"github.com/llmgw/llmgw/router/ratelimit",
		"github.com/llmgw/llmgw/router/replicas",
		"github.com/llmgw/llmgw/router/scheduler",
		"github.com/llmgw/llmgw/router/tenant",
		"github.com/llmgw/llmgw/router/tracing", // the decision's and admission's spans
		"go.opentelemetry.io/otel/attribute",
		"go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/semconv/v1.40.0",
		"go.opentelemetry.io/otel/trace",
	},
	// Tracing: the OpenTelemetry SDK and its OTLP/HTTP exporter stay here;
	// the packages that make spans see only the API.
	"router/tracing": {
		"go.opentelemetry.io/otel",
		"go.opentelemetry.io/otel/attribute",
		"go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp",
		"go.opentelemetry.io/otel/propagation",
		"go.opentelemetry.io/otel/sdk/resource",
		"go.opentelemetry.io/otel/sdk/trace",
		"go.opentelemetry.io/otel/semconv/v1.40.0",
		"go.opentelemetry.io/otel/trace",
		"go.opentelemetry.io/otel/trace/noop",
	},
	"router/migrate":   {"github.com/llmgw/llmgw/router/openai"},
	"router/auth":      {"github.com/hashicorp/go-hclog", "github.com/llmgw/llmgw/router/tenant"},
	"router/ratelimit": {"github.com/llmgw/llmgw/router/tenant"},
	"router/index":     nil,
	"router/ingest": {
		"github.com/hashicorp/go-hclog",
		"github.com/llmgw/llmgw/internal/kvwire",
		"github.com/llmgw/llmgw/router/index",
		"github.com/llmgw/llmgw/router/kvgroups",
	},
	"router/kvgroups": {
		"github.com/llmgw/llmgw/internal/kvwire",
		"github.com/llmgw/llmgw/router/index",
	},
	"router/openai": nil,
	// Imported by the gateway and by vllm-sim: no gin, gateway or sim.
	"router/anthropic":  {"github.com/llmgw/llmgw/router/openai"},
	"router/disagg":     nil,
	"router/statuspage": nil,
	"router/responses":  {"github.com/llmgw/llmgw/router/openai"},
	"router/listener": {
		"golang.org/x/net/netutil",
		"github.com/llmgw/llmgw/router/openai",
	},
	"internal/blockkey":         {"github.com/zeebo/xxh3"},
	"internal/kvwire":           {"github.com/vmihailenco/msgpack/v5"},
	"internal/testkit/testcert": nil,
	"internal/tests/attack":     nil, // tests only
	"internal/tests/docs":       nil, // tests only
	"internal/tests/sdk":        nil, // tests only
	"router/prompt": {
		"github.com/cespare/xxhash/v2",
		"github.com/llmgw/llmgw/internal/blockkey",
		"github.com/llmgw/llmgw/router/chattemplate",
		"github.com/llmgw/llmgw/router/harmony",
		"github.com/llmgw/llmgw/router/openai",
		"github.com/llmgw/llmgw/router/tokenizer",
	},
	"router/harmony": nil, // the standard library only
	"cmd/vllm-sim/simencoder": { // test support: no production binary links it
		"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer",
		"github.com/llmgw/llmgw/router/openai",
	},
	"router/enginetok": {
		"github.com/hashicorp/go-hclog",
		"github.com/prometheus/client_golang/prometheus",
		"github.com/llmgw/llmgw/router/openai",
		"github.com/llmgw/llmgw/router/replicas",
	},
	"router/replicas": {
		"github.com/hashicorp/go-hclog",
		"github.com/llmgw/llmgw/consul",
		"github.com/llmgw/llmgw/router/index",
		"github.com/llmgw/llmgw/router/ingest",
		"github.com/llmgw/llmgw/router/load",
		"github.com/llmgw/llmgw/router/scheduler",
	},
	"router/scheduler": {"github.com/llmgw/llmgw/router/index", "github.com/llmgw/llmgw/router/load"},
	// The peers' policies are scheduler plugins built on its exported API
	// alone, as an outside plugin would be (TestSchedulerHoldsNoPeerPolicy).
	"router/peerpolicy": {"github.com/llmgw/llmgw/router/scheduler"},
	"router/load":       nil,
	// The scaling signal is arithmetic over counts its caller gathers.
	"router/autoscale": nil,
	"router/peers": {
		"github.com/hashicorp/go-hclog",
		"github.com/llmgw/llmgw/router/load",
		"github.com/llmgw/llmgw/router/ratelimit",
	},
	"router/respstore":             nil,
	"router/tenant":                nil,
	"cmd/vllm-sim/simtokenizer":    nil,
	"internal/testkit/kvvectors":   nil,
	"cmd/vllm-sim/simproc":         nil,
	"internal/localproc/netport":   nil,
	"internal/localproc/pdeathsig": {"golang.org/x/sys/unix"},
	"plugin/msgpackdump":           nil,
	"internal/testkit/poll":        nil,
	"internal/testkit/gptoss":      nil,
	"cmd/llmgw-router/routertest": {
		"github.com/llmgw/llmgw/internal/localproc/pdeathsig",
		"github.com/llmgw/llmgw/internal/testkit/poll",
	},
	"cmd/llmgw/internal/chaos":        nil,
	"cmd/llmgw/internal/bench/trace":  nil,
	"cmd/llmgw/internal/bench/oracle": {"github.com/llmgw/llmgw/internal/blockkey"},
	"cmd/llmgw/internal/bench/workload": {
		"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/trace",
	},
	"cmd/llmgw/internal/bench/client": {"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"},
	"cmd/llmgw/internal/bench/report": {
		"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client",
		"gonum.org/v1/plot",
		"gonum.org/v1/plot/plotter",
		"gonum.org/v1/plot/plotutil",
		"gonum.org/v1/plot/vg",
		"gonum.org/v1/plot/vg/draw",
		"gonum.org/v1/plot/vg/vgimg",
	},
	"cmd/llmgw/internal/bench": {
		"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client",
		"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/oracle",
		"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report",
		"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload",
		"github.com/prometheus/client_model/go",
		"github.com/prometheus/common/expfmt",
		"github.com/prometheus/common/model",
		"github.com/schollz/progressbar/v3",
	},
	"internal/testkit/pdeathsigtest": nil,
	"internal/testkit/sdkstream": {
		"github.com/openai/openai-go/v3",
		"github.com/openai/openai-go/v3/option",
	},
}

// TestPackageContracts enforces each package comment's promise about its
// imports: the standard library plus only the listed packages.
func TestPackageContracts(t *testing.T) {
	for dir, allowed := range contracts {
		p, err := build.ImportDir(filepath.Join("..", "..", "..", dir), 0)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.Contains(strings.Split(imp, "/")[0], ".") {
				continue // standard library
			}
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s; its package contract allows only the standard library and %v", dir, imp, allowed)
			}
		}
	}
}
