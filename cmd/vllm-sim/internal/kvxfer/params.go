package kvxfer

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxBlockIDs bounds the block ids one kv_transfer_params may name: far
// more than a --max-model-len prompt needs, small enough that a hostile
// body cannot make the simulator hold much.
const MaxBlockIDs = 1 << 20

// Params is a request's or a response's kv_transfer_params, the dict
// vLLM's NixlConnector reads in get_num_new_matched_tokens and
// update_state_after_alloc and writes in request_finished.
type Params struct {
	DoRemoteDecode  bool
	DoRemotePrefill bool
	RemoteEngineID  string
	RemoteRequestID string
	// RemoteBlockIDs are the prefill instance's block ids, one list per
	// KV-cache group (vLLM's BlockIds); a flat list, as vLLM sent before
	// its hybrid allocator, reads as one group.
	RemoteBlockIDs [][]int
	RemoteHost     string
	RemotePort     int
	TPSize         int
}

// wireParams is the JSON shape; nulls read as absent.
type wireParams struct {
	DoRemoteDecode  *bool           `json:"do_remote_decode"`
	DoRemotePrefill *bool           `json:"do_remote_prefill"`
	RemoteEngineID  *string         `json:"remote_engine_id"`
	RemoteRequestID *string         `json:"remote_request_id"`
	RemoteBlockIDs  json.RawMessage `json:"remote_block_ids"`
	RemoteHost      *string         `json:"remote_host"`
	RemotePort      *int            `json:"remote_port"`
	TPSize          *int            `json:"tp_size"`
}

// ParseParams decodes kv_transfer_params. Absent or null is the zero
// Params (no transfer). Unknown keys are ignored, as vLLM's dict is open;
// a field of the wrong type, both directions at once, or a remote prefill
// without what the pull needs is an error that names the field.
func ParseParams(raw json.RawMessage) (Params, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Params{}, nil
	}
	if raw[0] != '{' {
		return Params{}, fmt.Errorf("kv_transfer_params must be a JSON object")
	}
	var w wireParams
	if err := json.Unmarshal(raw, &w); err != nil {
		return Params{}, fmt.Errorf("kv_transfer_params: %w", err)
	}
	var p Params
	p.DoRemoteDecode = w.DoRemoteDecode != nil && *w.DoRemoteDecode
	p.DoRemotePrefill = w.DoRemotePrefill != nil && *w.DoRemotePrefill
	if w.RemoteEngineID != nil {
		p.RemoteEngineID = *w.RemoteEngineID
	}
	if w.RemoteRequestID != nil {
		p.RemoteRequestID = *w.RemoteRequestID
	}
	if w.RemoteHost != nil {
		p.RemoteHost = *w.RemoteHost
	}
	if w.RemotePort != nil {
		p.RemotePort = *w.RemotePort
	}
	if w.TPSize != nil {
		p.TPSize = *w.TPSize
		if p.TPSize < 1 {
			return Params{}, fmt.Errorf("kv_transfer_params.tp_size must be positive, got %d", p.TPSize)
		}
	}
	ids, err := parseBlockIDs(w.RemoteBlockIDs)
	if err != nil {
		return Params{}, err
	}
	p.RemoteBlockIDs = ids
	if p.DoRemoteDecode && p.DoRemotePrefill {
		return Params{}, fmt.Errorf("kv_transfer_params: do_remote_decode and do_remote_prefill are both true; a request is either the prefill step or the decode step")
	}
	if p.DoRemotePrefill {
		if err := p.checkPull(); err != nil {
			return Params{}, err
		}
	}
	return p, nil
}

// checkPull checks what a decode instance needs to read the blocks.
func (p Params) checkPull() error {
	switch {
	case p.RemoteEngineID == "":
		return fmt.Errorf("kv_transfer_params: do_remote_prefill needs remote_engine_id")
	case p.RemoteRequestID == "":
		return fmt.Errorf("kv_transfer_params: do_remote_prefill needs remote_request_id")
	case p.RemoteHost == "":
		return fmt.Errorf("kv_transfer_params: do_remote_prefill needs remote_host")
	case p.RemotePort < 1 || p.RemotePort > 65535:
		return fmt.Errorf("kv_transfer_params: remote_port %d is not a TCP port", p.RemotePort)
	case len(p.RemoteBlockIDs) == 0:
		return fmt.Errorf("kv_transfer_params: do_remote_prefill needs remote_block_ids")
	}
	return nil
}

// parseBlockIDs reads a list of lists of block ids, or one flat list.
func parseBlockIDs(raw json.RawMessage) ([][]int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var groups [][]int
	if err := json.Unmarshal(raw, &groups); err != nil {
		var flat []int
		if json.Unmarshal(raw, &flat) != nil {
			return nil, fmt.Errorf("kv_transfer_params.remote_block_ids must be a list of block id lists (one per KV-cache group) or a list of block ids")
		}
		groups = [][]int{flat}
	}
	n := 0
	for g, ids := range groups {
		for _, id := range ids {
			if id < 0 {
				return nil, fmt.Errorf("kv_transfer_params.remote_block_ids[%d] holds a negative block id %d", g, id)
			}
		}
		n += len(ids)
		if n > MaxBlockIDs {
			return nil, fmt.Errorf("kv_transfer_params.remote_block_ids names more than %d blocks", MaxBlockIDs)
		}
	}
	return groups, nil
}

// MarshalJSON writes the params as vLLM's request_finished returns them.
func (p Params) MarshalJSON() ([]byte, error) {
	ids := p.RemoteBlockIDs
	if ids == nil {
		ids = [][]int{}
	}
	for i := range ids {
		if ids[i] == nil {
			ids[i] = []int{}
		}
	}
	return json.Marshal(struct {
		DoRemotePrefill bool    `json:"do_remote_prefill"`
		DoRemoteDecode  bool    `json:"do_remote_decode"`
		RemoteBlockIDs  [][]int `json:"remote_block_ids"`
		RemoteEngineID  string  `json:"remote_engine_id"`
		RemoteRequestID string  `json:"remote_request_id"`
		RemoteHost      string  `json:"remote_host"`
		RemotePort      int     `json:"remote_port"`
		TPSize          int     `json:"tp_size,omitempty"` // 0: unknown
	}{p.DoRemotePrefill, p.DoRemoteDecode, ids, p.RemoteEngineID, p.RemoteRequestID, p.RemoteHost, p.RemotePort, p.TPSize})
}
