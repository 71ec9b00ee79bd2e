package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestPromptTokensDetailsFollowTheFlag sends each prompt twice, cold then
// cached, with and without --enable-prompt-tokens-details, and reads the
// usage's prompt_tokens_details as vLLM writes it: without the flag, null
// in a JSON answer and left out of a stream's usage chunk; with it, chat
// always reports cached_tokens (0 included) and completions only when some
// are cached. The Responses API reports input_tokens_details.cached_tokens
// either way.
func TestPromptTokensDetailsFollowTheFlag(t *testing.T) {
	const absent, null, cached = "absent", "null", "cached" // cached: the prompt's full blocks but the last token's
	tests := []struct {
		path       string
		stream     bool
		cold, warm [2]string // without the flag, with it
	}{
		{"/v1/chat/completions", false, [2]string{null, "0"}, [2]string{null, cached}},
		{"/v1/chat/completions", true, [2]string{absent, "0"}, [2]string{absent, cached}},
		{"/v1/completions", false, [2]string{null, null}, [2]string{null, cached}},
		{"/v1/completions", true, [2]string{absent, absent}, [2]string{absent, cached}},
		{"/v1/responses", false, [2]string{"0", "0"}, [2]string{cached, cached}},
	}
	for flag, args := range [][]string{nil, {"--enable-prompt-tokens-details"}} {
		p := startSim(t, nil, append([]string{"--block-size", "16"}, args...)...)
		for i, tt := range tests {
			name := tt.path + map[bool]string{true: " stream", false: ""}[tt.stream] + map[int]string{0: " without the flag", 1: " with it"}[flag]
			t.Run(name, func(t *testing.T) {
				body := usageBody(tt.path, words(100*i+7, 70), tt.stream)
				for turn, want := range []string{tt.cold[flag], tt.warm[flag]} {
					got, prompt := promptDetails(t, p.URL+tt.path, body, tt.stream)
					if want == cached {
						want = strconv.Itoa((prompt - 1) / 16 * 16)
					}
					if got != want {
						t.Errorf("turn %d: cached tokens %s; want %s", turn, got, want)
					}
				}
			})
		}
	}
}

// usageBody is a request of path's API for prompt, asking a stream for
// its usage.
func usageBody(path, prompt string, stream bool) string {
	req := map[string]any{"model": "sim-model", "max_tokens": 2, "stream": stream}
	switch path {
	case "/v1/chat/completions":
		req["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	case "/v1/completions":
		req["prompt"] = prompt
	default:
		req = map[string]any{"model": "sim-model", "input": prompt, "max_output_tokens": 2}
	}
	if stream {
		req["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(req)
	return string(b)
}

// promptDetails posts body and returns its usage's cached tokens as
// written ("absent", "null", or the count) and its prompt tokens.
func promptDetails(t *testing.T, url, body string, stream bool) (string, int) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, raw)
	}
	if stream {
		raw = usageChunk(t, raw)
	}
	var u struct {
		Usage map[string]json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	prompt, details, key := u.Usage["prompt_tokens"], u.Usage["prompt_tokens_details"], "cached_tokens"
	if _, ok := u.Usage["input_tokens"]; ok { // the Responses API
		prompt, details = u.Usage["input_tokens"], u.Usage["input_tokens_details"]
	}
	n, _ := strconv.Atoi(string(prompt))
	switch {
	case details == nil:
		return "absent", n
	case string(details) == "null":
		return "null", n
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(details, &d); err != nil {
		t.Fatalf("details %s: %v", details, err)
	}
	return string(d[key]), n
}

// usageChunk is the data of a stream's chunk that carries a usage.
func usageChunk(t *testing.T, stream []byte) []byte {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if ok && bytes.Contains(data, []byte(`"usage":{`)) {
			return bytes.Clone(data)
		}
	}
	t.Fatalf("no usage chunk in %s", stream)
	return nil
}
