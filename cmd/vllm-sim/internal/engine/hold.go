package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// A prefill instance of a disaggregated fleet holds a finished request's
// blocks until the decode instance has read them, as vLLM's scheduler does
// when the connector's request_finished asks to delay freeing: the blocks
// stay referenced (so never evicted) until read or until HoldTimeout
// (VLLM_NIXL_ABORT_REQUEST_TIMEOUT) expires.

// ErrNotHeld reports a read for a request whose blocks are not held: never
// held, already read, or expired.
var ErrNotHeld = errors.New("no blocks are held for that request")

// heldSeq is a finished request whose blocks wait for a transfer.
type heldSeq struct {
	seq      kvcache.Seq
	deadline time.Time
}

// hold keeps r's blocks instead of freeing them and returns their ids,
// one list per KV-cache group.
func (e *Engine) hold(r *Request, now time.Time) [][]int {
	if e.held == nil {
		e.held = make(map[string]*heldSeq)
	}
	blocks := e.pool.SeqBlocks(&r.seq)
	ids := make([][]int, len(blocks))
	for g, bs := range blocks {
		ids[g] = make([]int, len(bs))
		for i, b := range bs {
			ids[g][i] = b.ID
		}
	}
	e.held[r.ID] = &heldSeq{seq: r.seq, deadline: now.Add(e.cfg.HoldTimeout)}
	return ids
}

// expireHeld frees the holds whose time is up, as vLLM's worker does for
// requests in reqs_to_send past their expiry.
func (e *Engine) expireHeld(now time.Time) {
	for id, h := range e.held {
		if now.Before(h.deadline) {
			continue
		}
		e.pool.Free(&h.seq)
		delete(e.held, id)
		e.log.Warn("releasing KV blocks no decode instance read", "request_id", id, "timeout", e.cfg.HoldTimeout)
		if e.cfg.OnHoldExpired != nil {
			e.cfg.OnHoldExpired()
		}
	}
}

// holdTimer fires at the earliest hold's deadline; nil (never) with none.
func (e *Engine) holdTimer() <-chan time.Time {
	if len(e.held) == 0 {
		return nil
	}
	var first time.Time
	for _, h := range e.held {
		if first.IsZero() || h.deadline.Before(first) {
			first = h.deadline
		}
	}
	return time.After(time.Until(first))
}

// ReadHeld reads the blocks ids (one list per group) of a held request and
// releases the hold, all of it, whatever was read: vLLM's decode side
// notifies the prefill side once, after reading what it lacks (nothing,
// when it caches the whole prompt). A block id the request does not hold
// is an error and keeps the hold.
func (e *Engine) ReadHeld(ctx context.Context, requestID string, ids [][]int) ([]kvcache.SeqBlock, error) {
	var out []kvcache.SeqBlock
	var rerr error
	err := e.Do(ctx, func(p *kvcache.Pool) {
		h, ok := e.held[requestID]
		if !ok {
			rerr = fmt.Errorf("%w: %q", ErrNotHeld, requestID)
			return
		}
		blocks := p.SeqBlocks(&h.seq)
		if len(ids) > len(blocks) {
			rerr = fmt.Errorf("block ids name %d KV-cache groups, the request holds %d", len(ids), len(blocks))
			return
		}
		for g, want := range ids {
			byID := make(map[int]kvcache.SeqBlock, len(blocks[g]))
			for _, b := range blocks[g] {
				byID[b.ID] = b
			}
			for _, id := range want {
				b, ok := byID[id]
				if !ok {
					rerr = fmt.Errorf("block %d of group %d is not held for request %q", id, g, requestID)
					out = nil
					return
				}
				out = append(out, b)
			}
		}
		p.Free(&h.seq)
		delete(e.held, requestID)
	})
	if err != nil {
		return nil, err
	}
	return out, rerr
}

// LocalHit is the number of prompt tokens r would find in this engine's
// prefix cache now: what a decode instance need not pull.
func (e *Engine) LocalHit(ctx context.Context, r *Request) (int, error) {
	var n int
	err := e.Do(ctx, func(p *kvcache.Pool) {
		s := kvcache.Seq{Tokens: r.Prompt, LoRA: r.LoRA, LoRAID: r.LoRAID, CacheSalt: r.CacheSalt}
		n = p.Lookup(&s).Tokens
	})
	return n, err
}
