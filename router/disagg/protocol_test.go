package disagg

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func TestPrefillBody(t *testing.T) {
	t.Parallel()
	in := `{"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true},"max_tokens":200,"max_completion_tokens":200,"min_tokens":5,"min_completion_tokens":5,"temperature":0.5,"cache_salt":"s","stop":["\n"],"stop_token_ids":[2],"ignore_eos":false}`
	out, err := PrefillBody([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	m := decodeMap(t, out)
	want := map[string]any{
		"model": "m", "prompt": "hi", "stream": false, "max_tokens": 1.0, "max_completion_tokens": 1.0, "temperature": 0.5, "cache_salt": "s", "ignore_eos": true,
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("prefill body\n got %v\nwant %v", m, want)
	}
	// max_completion_tokens is added only when the client sent it.
	out, err = PrefillBody([]byte(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeMap(t, out)["max_completion_tokens"]; ok {
		t.Errorf("%s: max_completion_tokens added", out)
	}
	for _, bad := range []string{``, `null`, `[1]`, `{"model":`} {
		if _, err := PrefillBody([]byte(bad)); err == nil || !strings.Contains(err.Error(), "request body: not a JSON object") {
			t.Errorf("PrefillBody(%q): %v; want a not-a-JSON-object error", bad, err)
		}
	}
}

const goodParams = `{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"e-1","remote_block_ids":[4,5,6],"remote_host":"10.0.0.7","remote_port":5600,"tp_size":1,"remote_request_id":"x"}`

func TestDecodeBodyKeepsTheRequest(t *testing.T) {
	t.Parallel()
	p, err := ParsePrefillResponse([]byte(`{"id":"cmpl-1","choices":[{"text":"a"}],"kv_transfer_params":` + goodParams + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.EngineID != "e-1" || p.Host != "10.0.0.7" || p.Port != 5600 || p.Blocks != 3 {
		t.Errorf("params %+v", p)
	}
	grouped, err := ParsePrefillResponse([]byte(`{"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[[7,8],[9,10]],"remote_host":"h","remote_port":5601}}`))
	if err != nil || grouped.Blocks != 2 {
		t.Errorf("block ids per KV-cache group: %+v, %v; want 2 blocks", grouped, err)
	}
	in := `{"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true},"max_tokens":200,"min_tokens":5}`
	out, err := DecodeBody([]byte(in), p)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeMap(t, out)
	kv := m["kv_transfer_params"]
	delete(m, "kv_transfer_params")
	if !reflect.DeepEqual(m, decodeMap(t, []byte(in))) {
		t.Errorf("decode body %v; want the client's request as it was", m)
	}
	if !reflect.DeepEqual(kv, decodeMap(t, []byte(goodParams))) {
		t.Errorf("kv_transfer_params %v; want the prefill answer's, whole (its extra fields too)", kv)
	}
}

func TestParsePrefillResponseErrors(t *testing.T) {
	t.Parallel()
	with := func(kv string) string { return `{"choices":[],"kv_transfer_params":` + kv + `}` }
	for _, c := range []struct{ name, body, want string }{
		{"not JSON", `<html>`, "not a JSON object"},
		{"an array", `[]`, "not a JSON object"},
		{"missing", `{"choices":[]}`, "no kv_transfer_params"},
		{"null", with(`null`), "no kv_transfer_params"},
		{"not an object", with(`"x"`), "kv_transfer_params: json"},
		{"not a remote prefill", with(`{"do_remote_prefill":false,"remote_engine_id":"e","remote_block_ids":[],"remote_host":"h","remote_port":1}`), "do_remote_prefill is not true"},
		{"no engine", with(`{"do_remote_prefill":true,"remote_block_ids":[],"remote_host":"h","remote_port":1}`), "no remote_engine_id"},
		{"no blocks", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_host":"h","remote_port":1}`), "no remote_block_ids"},
		{"bad block", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[1,-2],"remote_host":"h","remote_port":1}`), "remote_block_ids[1] -2 is not a block id"},
		{"string block", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":["1"],"remote_host":"h","remote_port":1}`), "neither a list of block ids nor a list of lists"},
		{"bad grouped block", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[[1],[2,-3]],"remote_host":"h","remote_port":1}`), "remote_block_ids[1][1] -3 is not a block id"},
		{"no host", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[],"remote_port":1}`), "no remote_host"},
		{"no port", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[],"remote_host":"h"}`), "no remote_port"},
		{"bad port", with(`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[],"remote_host":"h","remote_port":70000}`), "remote_port 70000 is not a port"},
		{"too large", `{"x":"` + strings.Repeat("a", MaxPrefillResponse) + `"}`, "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParsePrefillResponse([]byte(c.body))
			if !errors.Is(err, ErrBadPrefillResponse) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v; want an ErrBadPrefillResponse naming %q", err, c.want)
			}
		})
	}
}

// FuzzParsePrefillResponse: any answer either parses into parameters a
// decode body can carry, or fails with ErrBadPrefillResponse; never a
// panic.
func FuzzParsePrefillResponse(f *testing.F) {
	f.Add([]byte(`{"kv_transfer_params":` + goodParams + `}`))
	f.Add([]byte(`{"kv_transfer_params":null}`))
	f.Add([]byte(`{"kv_transfer_params":{"do_remote_prefill":true,"remote_port":"5600"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePrefillResponse(b)
		if err != nil {
			if !errors.Is(err, ErrBadPrefillResponse) {
				t.Fatalf("error %v does not wrap ErrBadPrefillResponse", err)
			}
			return
		}
		if p.EngineID == "" || p.Host == "" || p.Port <= 0 || p.Blocks < 0 || !json.Valid(p.Raw) {
			t.Fatalf("accepted incomplete parameters %+v", p)
		}
		out, err := DecodeBody([]byte(`{"model":"m","stream":true}`), p)
		if err != nil || !json.Valid(out) {
			t.Fatalf("decode body %s: %v", out, err)
		}
	})
}

// FuzzPrefillBody: any client body either becomes a one-token, unstreamed
// prefill request or is refused with an error; never a panic.
func FuzzPrefillBody(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"x","stream":true,"min_tokens":3}`))
	f.Add([]byte(`{"max_completion_tokens":9,"stream_options":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := PrefillBody(b)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("prefill body %s: %v", out, err)
		}
		if string(m["stream"]) != "false" || string(m["max_tokens"]) != "1" || m["min_tokens"] != nil || m["stream_options"] != nil {
			t.Fatalf("prefill body %s", out)
		}
	})
}
