// Command vllm-sim stands in for `vllm serve` where there are no GPUs: the
// same command line, OpenAI API, /metrics and KV-cache events, over a
// simulated paged KV cache and a latency model in which cache hits matter.
//
//	vllm-sim serve MODEL [vLLM flags] [--sim-* flags]
//	vllm-sim serve -h        (also -help, --help, `vllm-sim -h`, `vllm-sim help`)
//
// Help goes to stdout and exits 0 without serving; bad usage exits 2.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/config"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/sim"
)

func main() {
	cfg, err := config.Parse(os.Args[1:])
	if errors.Is(err, config.ErrVersion) {
		fmt.Println(config.Version)
		return
	}
	if errors.Is(err, config.ErrHelp) {
		if err := config.Usage(os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vllm-sim: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The line vLLM's uvicorn prints once serving; launchers wait for it.
	ready := func(addr net.Addr) {
		fmt.Fprintf(os.Stderr, "INFO:     Uvicorn running on http://%s (Press CTRL+C to quit)\n", addr)
	}
	if err := sim.Run(ctx, cfg, sim.EnvFromOS(), log, ready); err != nil {
		log.Error("vllm-sim failed", "err", err)
		os.Exit(1)
	}
}
