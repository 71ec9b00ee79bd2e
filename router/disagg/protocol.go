package disagg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// HeaderRequestID carries the one request id both steps share: vLLM names
// the request by it, and the prefill replica's held blocks are found by it.
const HeaderRequestID = "X-Request-Id"

// MaxPrefillResponse bounds the prefill answer the router reads: a
// one-token completion plus block ids, a few bytes per prompt block
// (a 128k-token prompt in 16-token blocks is about 60 KiB of ids).
const MaxPrefillResponse = 4 << 20

// ErrBadPrefillResponse wraps every reason a prefill answer cannot drive a
// decode step.
var ErrBadPrefillResponse = errors.New("bad prefill response")

// prefillRequestParams asks the prefill replica to keep the prompt's
// blocks for a remote decode, as vLLM's proxy examples do.
var prefillRequestParams = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

// object decodes a JSON object body into its members.
func object(body []byte, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", what, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%s: not a JSON object: null", what)
	}
	return m, nil
}

// PrefillBody turns a client's request body into the prefill step's: the
// same request with kv_transfer_params asking for a remote decode, as
// PrefillOnlyBody makes it.
func PrefillBody(body []byte) ([]byte, error) {
	m, err := prefillOnly(body)
	if err != nil {
		return nil, err
	}
	m["kv_transfer_params"] = prefillRequestParams
	return json.Marshal(m)
}

// PrefillOnlyBody turns a client's request body into one that has the
// engine compute the prompt and little else: not streamed, one token long
// (max_tokens 1, and max_completion_tokens 1 when the client sent it), one
// choice (n 1, no best_of), without stream_options, min_tokens or
// min_completion_tokens (a one-token answer cannot honour them). It also
// sets ignore_eos and drops stop and stop_token_ids: vLLM holds a prefill's
// blocks for the decode side only when the request ends by length, and the
// one token is thrown away, so an EOS or a stop match on it would only
// cost the transfer (the decode replica then prefills the prompt itself).
// The router sends it alone to copy a hot prefix to an idle replica
// (route.Plan.Warm), and with kv_transfer_params as a disaggregated
// request's prefill step (PrefillBody).
func PrefillOnlyBody(body []byte) ([]byte, error) {
	m, err := prefillOnly(body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func prefillOnly(body []byte) (map[string]json.RawMessage, error) {
	m, err := object(body, "request body")
	if err != nil {
		return nil, err
	}
	m["stream"] = json.RawMessage("false")
	m["max_tokens"] = json.RawMessage("1")
	if _, ok := m["max_completion_tokens"]; ok {
		m["max_completion_tokens"] = json.RawMessage("1")
	}
	if _, ok := m["n"]; ok {
		m["n"] = json.RawMessage("1")
	}
	delete(m, "best_of")
	delete(m, "stream_options")
	delete(m, "min_tokens")
	delete(m, "min_completion_tokens")
	m["ignore_eos"] = json.RawMessage("true")
	delete(m, "stop")
	delete(m, "stop_token_ids")
	return m, nil
}

// DecodeBody is the decode step's body: the client's request as it was
// (streamed as asked, its min_tokens kept) with kv_transfer_params set to
// the prefill replica's answer.
func DecodeBody(body []byte, p Params) ([]byte, error) {
	m, err := object(body, "request body")
	if err != nil {
		return nil, err
	}
	m["kv_transfer_params"] = p.Raw
	return json.Marshal(m)
}

// Params are the kv_transfer_params a prefill replica answered with: what
// a decode replica needs to pull the prompt's blocks.
type Params struct {
	// Raw is the object as the prefill replica sent it, passed on whole:
	// fields a newer vLLM adds (a remote request id, tp_size) reach the
	// decode replica untouched.
	Raw json.RawMessage
	// EngineID, Host and Port locate the prefill engine's side channel;
	// Blocks is how many block ids it holds for the request.
	EngineID string
	Host     string
	Port     int
	Blocks   int
}

// ParsePrefillResponse reads the prefill replica's non-streamed answer and
// returns its top-level kv_transfer_params, checked to be what a decode
// replica can pull from: do_remote_prefill true, a remote engine id, a
// list of integer block ids, a host and a port. Any other answer is an
// error wrapping ErrBadPrefillResponse that names what is wrong.
func ParsePrefillResponse(body []byte) (Params, error) {
	if len(body) > MaxPrefillResponse {
		return Params{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadPrefillResponse, len(body), MaxPrefillResponse)
	}
	var top struct {
		KV json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return Params{}, fmt.Errorf("%w: not a JSON object: %v", ErrBadPrefillResponse, err)
	}
	raw := bytes.TrimSpace(top.KV)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return Params{}, fmt.Errorf("%w: no kv_transfer_params (is the replica running with a KV connector as kv_producer or kv_both?)", ErrBadPrefillResponse)
	}
	var kv struct {
		DoRemotePrefill *bool            `json:"do_remote_prefill"`
		EngineID        *string          `json:"remote_engine_id"`
		BlockIDs        json.RawMessage  `json:"remote_block_ids"`
		Host            *string          `json:"remote_host"`
		Port            *json.RawMessage `json:"remote_port"`
	}
	if err := json.Unmarshal(raw, &kv); err != nil {
		return Params{}, fmt.Errorf("%w: kv_transfer_params: %v", ErrBadPrefillResponse, err)
	}
	bad := func(msg string) (Params, error) {
		return Params{}, fmt.Errorf("%w: kv_transfer_params: %s", ErrBadPrefillResponse, msg)
	}
	switch {
	case kv.DoRemotePrefill == nil || !*kv.DoRemotePrefill:
		return bad("do_remote_prefill is not true")
	case kv.EngineID == nil || *kv.EngineID == "":
		return bad("no remote_engine_id")
	case len(kv.BlockIDs) == 0 || string(kv.BlockIDs) == "null":
		return bad("no remote_block_ids")
	case kv.Host == nil || *kv.Host == "":
		return bad("no remote_host")
	case kv.Port == nil:
		return bad("no remote_port")
	}
	blocks, err := blockCount(kv.BlockIDs)
	if err != nil {
		return bad(err.Error())
	}
	var port int
	if err := json.Unmarshal(*kv.Port, &port); err != nil || port <= 0 || port > 65535 {
		return bad(fmt.Sprintf("remote_port %s is not a port", *kv.Port))
	}
	return Params{Raw: append(json.RawMessage(nil), raw...), EngineID: *kv.EngineID, Host: *kv.Host, Port: port, Blocks: blocks}, nil
}

// blockCount checks remote_block_ids, a list of block ids or, from vLLM's
// hybrid KV-cache allocator, one list per KV-cache group, and returns how
// many ids it holds (in the first group, for a list of groups: each group
// holds the same prompt).
func blockCount(raw json.RawMessage) (int, error) {
	var flat []int64
	if err := json.Unmarshal(raw, &flat); err == nil {
		return len(flat), checkIDs(flat, "remote_block_ids")
	}
	var groups [][]int64
	if err := json.Unmarshal(raw, &groups); err != nil {
		return 0, fmt.Errorf("remote_block_ids %.40s is neither a list of block ids nor a list of lists of them", raw)
	}
	for g, ids := range groups {
		if err := checkIDs(ids, fmt.Sprintf("remote_block_ids[%d]", g)); err != nil {
			return 0, err
		}
	}
	if len(groups) == 0 {
		return 0, nil
	}
	return len(groups[0]), nil
}

func checkIDs(ids []int64, where string) error {
	for i, id := range ids {
		if id < 0 {
			return fmt.Errorf("%s[%d] %d is not a block id", where, i, id)
		}
	}
	return nil
}
