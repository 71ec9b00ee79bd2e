package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
)

// Transfer configures disaggregated serving: nil in Options when the
// simulator runs without --kv-transfer-config, and kv_transfer_params are
// then ignored, as vLLM without a connector ignores them.
type Transfer struct {
	// Host is the side-channel host put in remote_host
	// (VLLM_NIXL_SIDE_CHANNEL_HOST).
	Host string
	// TPSize is the tensor-parallel size put in tp_size.
	TPSize int
	// BytesPerBlock and Bandwidth (bytes per second) model a pull's time;
	// the time is spent only when Latency is on.
	BytesPerBlock int64
	Bandwidth     float64
	Latency       bool
	// Recompute is kv_load_failure_policy "recompute": a failed pull
	// computes the prompt locally instead of failing the request.
	Recompute bool
	Client    *kvxfer.Client
}

// RankTransfer is one rank's side of the transfer: its engine id, the port
// its side channel listens on, and its NIXL series.
type RankTransfer struct {
	EngineID string
	Port     int
	Metrics  kvxfer.Engine
}

// transferParams reads a request's kv_transfer_params when the simulator
// plays a connector.
func (s *Server) transferParams(raw json.RawMessage) (kvxfer.Params, *apiError) {
	if s.opts.Transfer == nil {
		return kvxfer.Params{}, nil
	}
	p, err := kvxfer.ParseParams(raw)
	if err != nil {
		return kvxfer.Params{}, badRequest("%v", err)
	}
	return p, nil
}

// prepareTransfer readies a request for the engine of rank: a prefill step
// holds its blocks when done; a decode step pulls the blocks it lacks.
func (s *Server) prepareTransfer(ctx context.Context, rank Rank, r *engine.Request, kv kvxfer.Params, stream bool) error {
	switch {
	case s.opts.Transfer == nil:
	case kv.DoRemoteDecode:
		// A streamed prefill step has no response to carry the params.
		r.HoldForTransfer = !stream
	case kv.DoRemotePrefill:
		return s.pull(ctx, rank, r, kv)
	}
	return nil
}

// pull plays the decode side of vLLM's NixlConnector: the blocks of the
// local prefix hit stay, the rest of the prompt's blocks (the tail of
// remote_block_ids, as the worker's _read_blocks takes it) are read from
// the prefill instance, which then frees them; with nothing to read the
// read still tells it to free. The modelled time is bytes over bandwidth.
func (s *Server) pull(ctx context.Context, rank Rank, r *engine.Request, kv kvxfer.Params) error {
	t := s.opts.Transfer
	local, err := rank.Engine.LocalHit(ctx, r)
	if err != nil {
		return err
	}
	bs := s.opts.BlockSize
	promptBlocks := (len(r.Prompt) + bs - 1) / bs
	need := promptBlocks - local/bs
	if got := len(kv.RemoteBlockIDs[0]); got != promptBlocks {
		return badRequest("kv_transfer_params.remote_block_ids[0] lists %d blocks; a prompt of %d tokens in blocks of %d needs %d: the prefill step saw another prompt or block size", got, len(r.Prompt), bs, promptBlocks)
	}
	ids := make([][]int, len(kv.RemoteBlockIDs))
	n := 0
	for g, remote := range kv.RemoteBlockIDs {
		k := min(need, len(remote))
		ids[g] = remote[len(remote)-k:]
		n += k
	}
	start := time.Now()
	blocks, err := t.Client.Read(ctx, kv.RemoteHost, kv.RemotePort, kvxfer.ReadRequest{EngineID: kv.RemoteEngineID, RequestID: kv.RemoteRequestID, BlockIDs: ids})
	if err == nil {
		err = s.checkBlocks(r.Prompt, blocks)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rank.Transfer.Metrics.Failed()
		s.log.Warn("KV transfer failed", "remote_engine_id", kv.RemoteEngineID, "remote_request_id", kv.RemoteRequestID, "err", err)
		if t.Recompute {
			return nil // computed locally, as vLLM's recompute policy does
		}
		return &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", msg: fmt.Sprintf("KV transfer from engine %s failed: %v", kv.RemoteEngineID, err)}
	}
	bytes := int64(n) * t.BytesPerBlock
	d := time.Duration(float64(bytes) / t.Bandwidth * float64(time.Second))
	if t.Latency {
		if err := engine.SleepUntil(ctx, start.Add(d)); err != nil {
			return err
		}
	}
	rank.Transfer.Metrics.Transferred(n, bytes, time.Since(start))
	r.External = len(r.Prompt)
	return nil
}

// errMismatch is a pulled block whose tokens are not the prompt's.
var errMismatch = errors.New("pulled block does not hold the prompt's tokens")

// checkBlocks verifies that the full-attention blocks read hold the
// prompt's tokens at their positions.
func (s *Server) checkBlocks(prompt []uint32, blocks []kvxfer.Block) error {
	bs := s.opts.BlockSize
	for _, b := range blocks {
		if b.Group != 0 {
			continue
		}
		lo := b.Position * bs
		if b.Position < 0 || lo >= len(prompt) {
			return fmt.Errorf("%w: block %d is at position %d, past a prompt of %d tokens", errMismatch, b.ID, b.Position, len(prompt))
		}
		if want := prompt[lo:min(lo+bs, len(prompt))]; !slices.Equal(b.Tokens, want) {
			return fmt.Errorf("%w: block %d at position %d", errMismatch, b.ID, b.Position)
		}
	}
	return nil
}

// transferResult is the kv_transfer_params a finished prefill step
// answers, as vLLM's NixlConnectorScheduler.request_finished returns them;
// nil (no field) when nothing is held.
func (s *Server) transferResult(g *generation) any {
	if s.opts.Transfer == nil || g.held == nil {
		return nil
	}
	return &kvxfer.Params{
		DoRemotePrefill: true,
		RemoteBlockIDs:  g.held,
		RemoteEngineID:  g.rank.Transfer.EngineID,
		RemoteRequestID: g.req.ID,
		RemoteHost:      s.opts.Transfer.Host,
		RemotePort:      g.rank.Transfer.Port,
		TPSize:          s.opts.Transfer.TPSize,
	}
}

// Read serves this rank's side channel: the held blocks of a request.
func (rt RankReader) Read(ctx context.Context, requestID string, ids [][]int) ([]kvxfer.Block, error) {
	blocks, err := rt.Engine.ReadHeld(ctx, requestID, ids)
	if errors.Is(err, engine.ErrNotHeld) {
		return nil, fmt.Errorf("%w %q (never held, already read, or expired)", kvxfer.ErrNotHeld, requestID)
	}
	if err != nil {
		return nil, err
	}
	out := make([]kvxfer.Block, len(blocks))
	for i, b := range blocks {
		out[i] = kvxfer.Block{Group: b.Group, Position: b.Position, ID: b.ID, Tokens: b.Tokens}
		if b.Hashed {
			out[i].Hash = kvxfer.HashHex(b.Hash)
		}
	}
	return out, nil
}

// RankReader is the kvxfer.Source of one rank's engine.
type RankReader struct{ Engine *engine.Engine }

// prefillChat answers a chat prefill step: the one token, not streamed,
// with the kv_transfer_params of the blocks held.
func (s *Server) prefillChat(w http.ResponseWriter, requested string, g *generation) {
	res, text, ok := s.finish(w, g)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, chatResponse{
		ID: requestID("chatcmpl", s.counter.Add(1)), Object: "chat.completion", Created: time.Now().Unix(), Model: s.modelName(requested),
		Choices:          []chatChoice{{Message: &chatOutMessage{Role: "assistant", Content: text, ToolCalls: []any{}}, FinishReason: &res.reason}},
		Usage:            s.chatUsage(g.prompt, res),
		KVTransferParams: s.transferResult(g),
	})
}
