package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// field is one member of a JSON object: its key, and its value's bytes and
// the whole member's ("key": value) as they were sent.
type field struct {
	key           string
	value, member json.RawMessage
}

// splitObject lists an object's members in order, each value's bytes
// untouched.
func splitObject(body []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var fields []field
	for dec.More() {
		memberStart := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // object keys are always strings
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		end := dec.InputOffset()
		fields = append(fields, field{
			key:    key,
			value:  bytes.TrimLeft(body[start:end], " \t\r\n:"),
			member: bytes.TrimLeft(body[memberStart:end], " \t\r\n,"),
		})
	}
	return fields, nil
}

// Stateless returns r's body rewritten for an engine that keeps no state:
// input is the history items followed by r's input items;
// previous_response_id is removed; store is false; request_id is id (vLLM
// answers with the request_id as the response's id, so the router names
// the response it stores). Every other member is kept byte-for-byte, in
// the client's order; rewritten members keep their place and missing ones
// are appended.
func (r *Request) Stateless(history []json.RawMessage, id string) ([]byte, error) {
	fields, err := splitObject(bytes.TrimSpace(r.Body))
	if err != nil {
		return nil, bad("the request body must be a JSON object: %v", err)
	}
	input, err := json.Marshal(append(append([]json.RawMessage{}, history...), r.Input...))
	if err != nil {
		return nil, bad("input: %v", err)
	}
	idJSON, _ := json.Marshal(id)
	set := map[string]json.RawMessage{"input": input, "store": json.RawMessage("false"), "request_id": idJSON}
	written := map[string]bool{}
	var b bytes.Buffer
	b.WriteByte('{')
	sep := func() {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
	}
	put := func(key string, value []byte) {
		sep()
		writeJSON(&b, key)
		b.WriteByte(':')
		b.Write(value)
	}
	for _, f := range fields {
		// Parse reads members as encoding/json does, matching keys without
		// regard to case, so a rewritten member is found the same way: a
		// "Previous_Response_ID" the router acted on must not reach the
		// engine either.
		key := canonical(f.key)
		v, rewrite := set[key]
		switch {
		case key == "previous_response_id" || written[key] && rewrite:
		case rewrite:
			put(key, v)
			written[key] = true
		default:
			sep()
			b.Write(f.member)
		}
	}
	for _, k := range []string{"input", "store", "request_id"} {
		if !written[k] {
			put(k, set[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// canonical returns the member name Stateless rewrites that key stands
// for, as encoding/json matches names (case-folded), or key itself.
func canonical(key string) string {
	for _, k := range [...]string{"previous_response_id", "input", "store", "request_id"} {
		if strings.EqualFold(key, k) {
			return k
		}
	}
	return key
}
