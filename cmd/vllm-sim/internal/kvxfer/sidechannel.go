package kvxfer

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// readPath is the side channel's one route.
const readPath = "/sim/kv/read"

// maxSideBody bounds a side-channel body either way: a read names at most
// MaxBlockIDs ids, an answer carries the tokens of the blocks read.
const maxSideBody = 64 << 20

// Block is one block as the prefill side answers it: its KV-cache group,
// position in the sequence and block id, its hash (hex) when cached, and
// the tokens whose KV it holds, which the decode side checks against its
// own prompt.
type Block struct {
	Group    int      `json:"group"`
	Position int      `json:"position"`
	ID       int      `json:"id"`
	Hash     string   `json:"hash,omitempty"`
	Tokens   []uint32 `json:"tokens"`
}

// HashHex formats a block hash for Block.Hash.
func HashHex(h [32]byte) string { return hex.EncodeToString(h[:]) }

// ReadRequest asks the prefill side for held blocks and releases the hold.
type ReadRequest struct {
	EngineID  string  `json:"engine_id"`
	RequestID string  `json:"request_id"`
	BlockIDs  [][]int `json:"block_ids"`
}

type readResponse struct {
	EngineID string  `json:"engine_id"`
	Blocks   []Block `json:"blocks"`
}

type errorResponse struct {
	Error string `json:"error"`
}

// Source is the prefill side's store of held blocks.
type Source interface {
	// Read returns the blocks and releases the request's hold. ErrNotHeld
	// (wrapped) means the request holds nothing here.
	Read(ctx context.Context, requestID string, ids [][]int) ([]Block, error)
}

// ErrNotHeld is what a Source returns for a request it holds nothing for.
var ErrNotHeld = errors.New("no blocks held for the request")

// Serve answers side-channel reads for engineID on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, engineID string, src Source, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+readPath, func(w http.ResponseWriter, r *http.Request) {
		var req ReadRequest
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSideBody))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			writeSide(w, http.StatusBadRequest, errorResponse{fmt.Sprintf("reading the read request: %v", err)})
			return
		}
		if req.EngineID != engineID {
			writeSide(w, http.StatusNotFound, errorResponse{fmt.Sprintf("engine %q is not this engine (%q)", req.EngineID, engineID)})
			return
		}
		if n := countIDs(req.BlockIDs); n > MaxBlockIDs {
			writeSide(w, http.StatusBadRequest, errorResponse{fmt.Sprintf("a read names %d blocks, more than %d", n, MaxBlockIDs)})
			return
		}
		blocks, err := src.Read(r.Context(), req.RequestID, req.BlockIDs)
		switch {
		case errors.Is(err, ErrNotHeld):
			writeSide(w, http.StatusNotFound, errorResponse{err.Error()})
		case err != nil:
			writeSide(w, http.StatusConflict, errorResponse{err.Error()})
		default:
			writeSide(w, http.StatusOK, readResponse{EngineID: engineID, Blocks: blocks})
		}
	})
	// Requests carry ctx, so a read waiting on a stopped engine ends with it.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("kv side channel: %w", err)
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := hs.Shutdown(shutdown); err != nil {
		log.Warn("kv side channel shutdown", "err", err)
	}
	<-served
	return nil
}

func countIDs(ids [][]int) int {
	n := 0
	for _, g := range ids {
		n += len(g)
	}
	return n
}

func writeSide(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client reads blocks from prefill instances' side channels.
type Client struct {
	HTTP *http.Client
}

// NewClient returns a client whose reads give up after timeout.
func NewClient(timeout time.Duration) *Client {
	return &Client{HTTP: &http.Client{Timeout: timeout}}
}

// Read fetches the blocks ids of requestID from the engine at host:port and
// releases the prefill side's hold.
func (c *Client) Read(ctx context.Context, host string, port int, req ReadRequest) ([]Block, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + readPath
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("kv side channel %s: %w", url, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("kv side channel: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxSideBody+1))
	if err != nil {
		return nil, fmt.Errorf("kv side channel %s: reading the answer: %w", url, err)
	}
	if len(raw) > maxSideBody {
		return nil, fmt.Errorf("kv side channel %s: answer over %d bytes", url, maxSideBody)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorResponse
		_ = json.Unmarshal(raw, &e)
		return nil, fmt.Errorf("kv side channel %s: %s: %s", url, resp.Status, e.Error)
	}
	var out readResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("kv side channel %s: bad answer: %w", url, err)
	}
	if out.EngineID != req.EngineID {
		return nil, fmt.Errorf("kv side channel %s: answered for engine %q, asked %q", url, out.EngineID, req.EngineID)
	}
	if len(out.Blocks) != countIDs(req.BlockIDs) {
		return nil, fmt.Errorf("kv side channel %s: answered %d blocks, asked %d", url, len(out.Blocks), countIDs(req.BlockIDs))
	}
	return out.Blocks, nil
}
