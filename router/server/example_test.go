package server_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// myScorer is a custom scorer; this one has no opinion.
type myScorer struct{ name scheduler.TypedName }

func (s *myScorer) TypedName() scheduler.TypedName { return s.name }

func (s *myScorer) Score(context.Context, *scheduler.Request, []scheduler.Candidate, []float64) {}

// A custom build of llmgw-router: cmd/llmgw-router's main with one more
// scheduler plugin type, which the config's scheduler block can then name
// (scorer "my-scorer" { weight = 1 }).
func ExampleWithPlugins() {
	fs := config.BindFlags(flag.CommandLine)
	flag.Parse()
	cfg, err := fs.Resolve(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "my-router:", err)
		os.Exit(2)
	}
	plugins := server.WithPlugins(func(r *scheduler.Registry) error {
		return r.Register("my-scorer", func(n scheduler.TypedName, _ json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
			return &myScorer{name: n}, nil
		})
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg, hclog.Default(), plugins); err != nil {
		fmt.Fprintln(os.Stderr, "my-router:", err)
		os.Exit(1)
	}
}
