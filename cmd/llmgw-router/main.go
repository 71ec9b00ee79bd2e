// Command llmgw-router is llmgw's OpenAI-compatible gateway: it discovers
// model replicas in Consul, learns which replica caches which prompt blocks
// from the drivers' KV updates, and proxies each request to the best one.
//
//	llmgw-router -config router.hcl
//
// Configuration comes from the HCL file, then LLMGW_* environment variables,
// then flags (see router/config). SIGINT or SIGTERM shuts it down cleanly;
// SIGHUP reloads the keys file.
//
// The scheduler accepts llmgw's own plugins and, as plugins registered
// through server.WithPlugins, the peers' policies (router/peerpolicy), so
// that `llmgw bench` runs every baseline with this binary.
//
//	llmgw-router -new-key            # a new API key and its hash
//	llmgw-router -hash-key < key.txt # the hash of a key, for the keys file
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/peerpolicy"
	"github.com/llmgw/llmgw/router/server"
)

func main() {
	fs := flag.NewFlagSet("llmgw-router", flag.ExitOnError)
	flags := config.BindFlags(fs)
	hashKey := fs.Bool("hash-key", false, "read an API key from stdin, print its SHA-256 (for keys_sha256 in the keys file) and exit")
	newKey := fs.Bool("new-key", false, "print a new random API key and its SHA-256, and exit")
	_ = fs.Parse(os.Args[1:])
	if *hashKey || *newKey {
		if err := keyTool(*newKey, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "llmgw-router:", err)
			os.Exit(2)
		}
		return
	}
	cfg, err := flags.Resolve(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmgw-router:", err)
		os.Exit(2)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "llmgw-router", Level: hclog.LevelFromString(cfg.LogLevel)})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg, log, options()...); err != nil {
		log.Error("router failed", "error", err)
		os.Exit(1)
	}
}

// options are what the shipped router adds to server.Run's defaults: the
// peers' routing policies as scheduler plugins, always, so that the
// binary `llmgw bench` starts accepts every policy it compares
// (router/peerpolicy's package comment says why not behind a flag).
func options() []server.Option {
	return []server.Option{server.WithPlugins(peerpolicy.Register)}
}
