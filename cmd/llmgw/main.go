// Command llmgw is the operator's CLI:
//
//	llmgw demo                    run Consul, the driver, vllm-sim shards and routers locally; compare llmgw's default
//	                              with round-robin and the peers' policies and print a verdict
//	                              (-discovery nomad: on Nomad's services API, a stand-in, instead of Consul)
//	llmgw jobs validate FILE...   check jobspecs' vllm tasks before `nomad job run`
//	llmgw jobs run FILE           validate, submit to Nomad and follow the deployment
//	llmgw status                  the fleet as each router sees it: replicas, routing mode, index size, load
//	llmgw bench                   compare routing policies on a local fleet and report TTFT, ITL, goodput, cache hits
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/demo"
)

const usage = `usage: llmgw demo [-shards N] [-routers N] [-users N] [-rounds N] [-policies LIST | -variants]
       llmgw jobs validate FILE...
       llmgw jobs run [-address URL] FILE
       llmgw status [-consul ADDR] [-router HOST:PORT]...
       llmgw bench [-workload chat|prefix|siblings|trace] [-rate R] [-out DIR] [flags]
       llmgw COMMAND -h   (every command's flags)`

const demoUsage = `usage: llmgw demo [-shards N] [-routers N] [-users N] [-rounds N] [-policies LIST | -variants] [-slo-ttft D] [-slo-itl D]
                  [-workdir DIR] [-discovery consul|nomad]

Starts a local fleet and sends one multi-turn chat through it per routing policy:
llmgw's default, round-robin and the peers' published policies (-variants: also the
default's internal variants; -policies: the ones named). Prints each policy's requests
within the SLO, cache hits and TTFT, then a verdict: the default's requests within the
SLO against the best peer's and round-robin's.`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs `llmgw ARGS...` and returns the exit code. Help asked for, at
// any level (`llmgw -h`, `llmgw help`, `llmgw jobs -h`, `llmgw bench
// --help`, ...), prints to stdout and exits 0.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd := args[0]; {
	case cmd == "jobs":
		return runJobs(ctx, args[1:], stdout, stderr)
	case cmd == "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case cmd == "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case cmd == "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case isHelp(cmd):
		fmt.Fprintln(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "llmgw: unknown command %q\n%s\n", args[0], usage)
	return 2
}

// runDemo runs `llmgw demo`: 0, 1 when the demo fails, 2 for bad usage.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := demo.ParseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "%s\n\n%v", demoUsage, err)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "llmgw demo: %v\n%s\n", err, usage)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "llmgw demo: %v\n", err)
		return 1
	}
	cfg.BinDir = filepath.Dir(self) // the binaries `make build` puts beside llmgw
	if err := demo.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "llmgw demo: %v\n", err)
		return 1
	}
	return 0
}
