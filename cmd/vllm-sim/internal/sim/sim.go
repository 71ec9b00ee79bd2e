// Package sim wires vllm-sim together: one KV cache, engine and event
// publisher per data-parallel rank, and the HTTP server in front of them.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/config"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvpub"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/server"
)

// Env is the part of the environment vLLM reads.
type Env struct {
	HashSeed  string // PYTHONHASHSEED
	IntHashes bool   // VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, default true
	// APIKey is VLLM_API_KEY, the key vLLM requires when no --api-key is
	// given: it keeps the key out of the command line.
	APIKey string
	// Side channel of the NixlConnector: VLLM_NIXL_SIDE_CHANNEL_HOST and
	// VLLM_NIXL_SIDE_CHANNEL_PORT, raw ("" for vLLM's defaults), and
	// VLLM_NIXL_ABORT_REQUEST_TIMEOUT in seconds.
	SideChannelHost, SideChannelPort, AbortTimeout string
	// ResponsesStore is VLLM_ENABLE_RESPONSES_API_STORE: an integer, on
	// when not 0 (vLLM's default is 0, off).
	ResponsesStore bool
}

// EnvFromOS reads Env from the process environment.
func EnvFromOS() Env {
	return Env{
		HashSeed:  os.Getenv("PYTHONHASHSEED"),
		IntHashes: os.Getenv("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES") != "0",
		APIKey:    os.Getenv("VLLM_API_KEY"),

		SideChannelHost: os.Getenv("VLLM_NIXL_SIDE_CHANNEL_HOST"),
		SideChannelPort: os.Getenv("VLLM_NIXL_SIDE_CHANNEL_PORT"),
		AbortTimeout:    os.Getenv("VLLM_NIXL_ABORT_REQUEST_TIMEOUT"),
		ResponsesStore:  envFlag(os.Getenv("VLLM_ENABLE_RESPONSES_API_STORE")),
	}
}

// serverOptions are the HTTP server's options from the flags and the
// environment.
func serverOptions(cfg config.Config, env Env, side *sideChannel) server.Options {
	return server.Options{
		Model: cfg.Model, ServedNames: cfg.ServedModelNames, MaxModelLen: cfg.MaxModelLen,
		BlockSize: cfg.BlockSize, APIKeys: apiKeys(cfg, env), Seed: cfg.Seed,
		Overhead: overhead(cfg.Latency), MeanOutputTokens: 128, Version: config.Version,
		LoRAs: loras(cfg.LoRAModules), Transfer: side.transfer(cfg), ResponsesStore: env.ResponsesStore,
		Task: cfg.Task(), NumLabels: cfg.NumLabels, PromptTokensDetails: cfg.EnablePromptTokensDetails,
	}
}

// envFlag reads an environment switch as vLLM's envs.py does,
// bool(int(value)): an integer, on when not 0. vLLM fails to start on a
// value that is not an integer; the simulator leaves the switch off.
func envFlag(v string) bool {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return err == nil && n != 0
}

// logConfig logs what the engine does with its flags: those it ignores,
// and the block size it overrode, in vLLM's words.
func logConfig(cfg config.Config, log *slog.Logger) {
	for _, u := range cfg.Unknown {
		log.Info("ignoring a vLLM flag the simulator does not model", "flag", u)
	}
	if cfg.Engine.Note != "" {
		log.Info(cfg.Engine.Note, "block_size", cfg.BlockSize)
	}
}

// Run serves until ctx ends, calling ready with the listening address once
// requests are accepted. It reports a start-up failure (a port in use, a
// socket that cannot bind) as an error before serving anything.
func Run(ctx context.Context, cfg config.Config, env Env, log *slog.Logger, ready func(net.Addr)) error {
	logConfig(cfg, log)
	if cfg.Headless {
		// A non-leader shard of a multi-node replica: vLLM runs its engine
		// workers without an API server and publishes no events.
		log.Info("running headless: no API server, no KV events", "dp_rank", cfg.DataParallelRank)
		<-ctx.Done()
		return nil
	}
	tok, err := loadTokenizer(cfg.Tokenizer, log)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	family := engine.NewFamily(reg)
	side, err := sideChannelOf(cfg, env)
	if err != nil {
		return err
	}
	if side != nil {
		side.metrics = kvxfer.NewMetrics(reg)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var ranks []server.Rank
	var pubs []*kvpub.Publisher
	defer func() {
		cancel()
		wg.Wait()
		for _, p := range pubs {
			p.Close()
		}
	}()
	for _, id := range cfg.Ranks() {
		rank, pub, err := startRank(ctx, cfg, env, id, family, side, log, &wg)
		if err != nil {
			return err
		}
		if side != nil {
			if rank.Transfer, err = side.serve(ctx, cfg, id, rank.Engine, log, &wg); err != nil {
				return err
			}
		}
		ranks = append(ranks, rank)
		if pub != nil {
			pubs = append(pubs, pub)
		}
	}

	srv := server.New(serverOptions(cfg, env, side), ranks, tok, reg, log)
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen on %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}

	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// apiKeys are the keys vLLM's API server requires: --api-key when given,
// else VLLM_API_KEY; empty ones are dropped.
func apiKeys(cfg config.Config, env Env) []string {
	if len(cfg.APIKeys) > 0 {
		return cfg.APIKeys
	}
	if env.APIKey != "" {
		return []string{env.APIKey}
	}
	return nil
}

func overhead(l engine.Latency) time.Duration {
	if !l.Enabled {
		return 0
	}
	return l.Overhead
}

func startRank(ctx context.Context, cfg config.Config, env Env, id int, family *engine.Family, side *sideChannel, log *slog.Logger, wg *sync.WaitGroup) (server.Rank, *kvpub.Publisher, error) {
	log = log.With("dp_rank", id)
	pool, err := kvcache.New(kvcache.Config{
		NumBlocks: cfg.NumGPUBlocks, BlockSize: cfg.BlockSize, CPUBlocks: cfg.CPUOffloadBlocks, CPUBlockSize: cfg.CPUOffloadBlockSize, CPUPlaceholders: cfg.CPUOffloadPlaceholders,
		HashSeed: env.HashSeed, DisableCache: !cfg.EnablePrefixCaching, Groups: cfg.KVCacheGroups,
	})
	if err != nil {
		return server.Rank{}, nil, err
	}
	var pub *kvpub.Publisher
	var publisher engine.Publisher
	if cfg.KVEvents.Active() {
		pub, err = openPublisher(cfg, env, id, log)
		if err != nil {
			return server.Rank{}, nil, err
		}
		publisher = pub
	}
	m := family.For(cfg.ServedName(), id, cfg.BlockSize, cfg.NumGPUBlocks)
	ecfg := engine.Config{
		MaxNumSeqs: cfg.MaxNumSeqs, MaxBatchedTokens: cfg.MaxNumBatchedTokens, Latency: cfg.Latency, DPRank: id,
	}
	if side != nil {
		ecfg.HoldTimeout = side.abortTimeout
		ecfg.OnHoldExpired = side.metrics.For(cfg.ServedName(), id).Expired
	}
	eng, err := engine.New(ecfg, pool, publisher, m, log)
	if err != nil {
		if pub != nil {
			pub.Close()
		}
		return server.Rank{}, nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = eng.Run(ctx)
	}()
	rank := server.Rank{ID: id, Engine: eng}
	if pub != nil {
		rank.Drop = pub.Drop
	}
	return rank, pub, nil
}

func openPublisher(cfg config.Config, env Env, rank int, log *slog.Logger) (*kvpub.Publisher, error) {
	kv := cfg.KVEvents
	endpoint, err := kvpub.OffsetEndpointPort(kv.Endpoint, rank)
	if err != nil {
		return nil, err
	}
	replay, err := kvpub.OffsetEndpointPort(kv.ReplayEndpoint, rank)
	if err != nil {
		return nil, err
	}
	schema := kvpub.Schema{Format: kvpub.Array, StoredLen: cfg.EventSchema, IntHashes: env.IntHashes}
	if cfg.EventFormat == "map" {
		schema.Format, schema.StoredLen = kvpub.Map, 12
	}
	shape := kvpub.ReplayNew
	if cfg.ReplayFormat == "old" {
		shape = kvpub.ReplayOld
	}
	pub, err := kvpub.New(kvpub.Config{
		Endpoint: endpoint, ReplayEndpoint: replay, Topic: kv.Topic,
		BufferSteps: kv.BufferSteps, HWM: kv.HWM, MaxQueueSize: kv.MaxQueueSize,
		DPRank: rank, Schema: schema, ReplayShape: shape,
	}, log)
	if err != nil {
		return nil, err
	}
	log.Info("publishing KV events", "endpoint", endpoint, "replay", replay, "format", cfg.EventFormat, "schema", schema.StoredLen)
	return pub, nil
}

func loras(mods []config.LoRAModule) []server.LoRA {
	out := make([]server.LoRA, len(mods))
	for i, m := range mods {
		out[i] = server.LoRA{Name: m.Name, Path: m.Path, ID: m.ID}
	}
	return out
}
