package sim

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/config"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/server"
)

// vLLM's defaults for the NIXL side channel (vllm/envs.py).
const (
	defaultSideHost     = "localhost"
	defaultSidePort     = 5600
	defaultAbortTimeout = 480 * time.Second
)

// sideChannel is the process's NixlConnector setup; nil without
// --kv-transfer-config.
type sideChannel struct {
	host         string
	port         int // the base port; rank r listens on port+r (0: any free port)
	abortTimeout time.Duration
	metrics      *kvxfer.Metrics
}

// sideChannelOf reads the side channel's environment.
func sideChannelOf(cfg config.Config, env Env) (*sideChannel, error) {
	if !cfg.KVTransfer.Enabled() {
		return nil, nil
	}
	sc := &sideChannel{host: defaultSideHost, port: defaultSidePort, abortTimeout: defaultAbortTimeout}
	if env.SideChannelHost != "" {
		sc.host = env.SideChannelHost
	}
	if env.SideChannelPort != "" {
		p, err := strconv.Atoi(env.SideChannelPort)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("VLLM_NIXL_SIDE_CHANNEL_PORT %q is not a TCP port", env.SideChannelPort)
		}
		sc.port = p
	}
	if env.AbortTimeout != "" {
		n, err := strconv.Atoi(env.AbortTimeout)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("VLLM_NIXL_ABORT_REQUEST_TIMEOUT %q is not a positive number of seconds", env.AbortTimeout)
		}
		sc.abortTimeout = time.Duration(n) * time.Second
	}
	return sc, nil
}

// serve opens rank's side channel on port+rank, as vLLM offsets it by the
// data-parallel index, and serves it until ctx ends.
func (sc *sideChannel) serve(ctx context.Context, cfg config.Config, rank int, eng *engine.Engine, log *slog.Logger, wg *sync.WaitGroup) (server.RankTransfer, error) {
	port := sc.port
	if port != 0 {
		port += rank
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(sc.host, strconv.Itoa(port)))
	if err != nil {
		return server.RankTransfer{}, fmt.Errorf("NIXL side channel on %s:%d: %w", sc.host, port, err)
	}
	id := cfg.KVTransfer.EngineID
	if cfg.DataParallelSize > 1 {
		id = fmt.Sprintf("%s_dp%d", id, rank)
	}
	actual := ln.Addr().(*net.TCPAddr).Port
	log.Info("serving the NIXL side channel", "dp_rank", rank, "engine_id", id, "kv_role", cfg.KVTransfer.Role, "addr", ln.Addr().String())
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := kvxfer.Serve(ctx, ln, id, server.RankReader{Engine: eng}, log); err != nil {
			log.Error("NIXL side channel stopped", "err", err)
		}
	}()
	return server.RankTransfer{EngineID: id, Port: actual, Metrics: sc.metrics.For(cfg.ServedName(), rank)}, nil
}

// transfer is the server's view; nil without a connector.
func (sc *sideChannel) transfer(cfg config.Config) *server.Transfer {
	if sc == nil {
		return nil
	}
	return &server.Transfer{
		Host: sc.host, TPSize: cfg.TensorParallelSize,
		BytesPerBlock: cfg.KVBytesPerToken * int64(cfg.BlockSize), Bandwidth: cfg.KVBandwidth,
		Latency: cfg.Latency.Enabled, Recompute: cfg.KVTransfer.LoadFailurePolicy == "recompute",
		Client: kvxfer.NewClient(30 * time.Second),
	}
}
