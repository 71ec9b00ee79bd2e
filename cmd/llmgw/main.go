// Command llmgw is the operator's CLI:
//
//	llmgw demo                    run Consul, the driver, vllm-sim shards and routers locally; compare routing policies
//	llmgw jobs validate FILE...   check jobspecs' vllm tasks before `nomad job run`
//	llmgw jobs run FILE           validate, submit to Nomad and follow the deployment
//	llmgw status                  the fleet as each router sees it: replicas, routing mode, index size, load
//	llmgw bench                   compare routing policies on a local fleet and report TTFT, ITL, goodput, cache hits
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/demo"
)

const usage = `usage: llmgw demo [-shards N] [-routers N] [-users N] [-rounds N] [-policies LIST]
       llmgw jobs validate FILE...
       llmgw jobs run [-address URL] FILE
       llmgw status [-consul ADDR] [-router HOST:PORT]...
       llmgw bench [-workload chat|prefix|siblings|trace] [-rate R] [-out DIR] [flags]`

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "jobs" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runJobs(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) >= 2 && os.Args[1] == "status" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runStatus(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) >= 2 && os.Args[1] == "bench" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runBench(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) < 2 || os.Args[1] != "demo" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cfg, err := demo.ParseFlags(os.Args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "llmgw demo: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "llmgw demo: %v\n", err)
		os.Exit(1)
	}
	cfg.BinDir = filepath.Dir(self) // the binaries `make build` puts beside llmgw
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "llmgw demo: %v\n", err)
		os.Exit(1)
	}
}
