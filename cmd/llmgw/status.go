package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/status"
)

const statusUsage = `usage: llmgw status [-consul ADDR] [-router ADMIN_HOST:PORT]... [-admin-token T] [-timeout D]`

// routerList collects repeated -router flags.
type routerList []string

func (r *routerList) String() string     { return strings.Join(*r, ",") }
func (r *routerList) Set(v string) error { *r = append(*r, v); return nil }

// runStatus runs `llmgw status` and returns the exit code: 0, 1 when a
// router or Consul cannot be read, 2 for bad usage.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llmgw status", flag.ContinueOnError)
	consulAddr := os.Getenv("CONSUL_HTTP_ADDR")
	if consulAddr == "" {
		consulAddr = "127.0.0.1:8500"
	}
	var opts status.Options
	fs.StringVar(&opts.Consul, "consul", consulAddr, "Consul agent HTTP address where routers register (default $CONSUL_HTTP_ADDR)")
	fs.Var((*routerList)(&opts.Routers), "router", "ask the router with this admin address (its admin_listen, host:port) instead of finding routers in Consul; repeatable")
	fs.StringVar(&opts.AdminToken, "admin-token", os.Getenv("LLMGW_ADMIN_TOKEN"), "Bearer token of routers with admin_token (default $LLMGW_ADMIN_TOKEN)")
	fs.DurationVar(&opts.Timeout, "timeout", 10*time.Second, "bound on finding routers and on each router's answer")
	if code, done := parseFlags(fs, args, statusUsage, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "llmgw status: unexpected arguments %q\n%s\n", fs.Args(), statusUsage)
		return 2
	}
	if err := status.Run(ctx, opts, stdout); err != nil {
		fmt.Fprintf(stderr, "llmgw status: %v\n", err)
		return 1
	}
	return 0
}
