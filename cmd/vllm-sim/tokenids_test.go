package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// idsChoice is a choice as return_token_ids shapes it.
type idsChoice struct {
	Text           string   `json:"text"`
	TokenIDs       []uint32 `json:"token_ids"`
	PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	Delta          *struct {
		Content string `json:"content"`
	} `json:"delta"`
}

// streamIDs reads a stream's choices.
func streamIDs(t *testing.T, url string, body map[string]any) []idsChoice {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []idsChoice
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct{ Choices []idsChoice }
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Choices...)
	}
	return out
}

// TestReturnTokenIDs: with return_token_ids the prompt's ids come once
// (the stream's first chunk, or the answer's choice) and every chunk the
// ids of its delta, as vLLM sends them; they are the ids /tokenize gives
// and the same as the non-streamed answer's. Without it there are none.
func TestReturnTokenIDs(t *testing.T) {
	p := startSim(t, nil)
	prompt := "the cache holds the prefix"
	var tok struct{ Tokens []uint32 }
	post(t, p.URL+"/tokenize", map[string]any{"model": "sim-model", "prompt": prompt}, &tok)
	req := map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 12, "seed": 3, "ignore_eos": true, "return_token_ids": true}
	var whole struct{ Choices []idsChoice }
	if st := post(t, p.URL+"/v1/completions", req, &whole); st != http.StatusOK || len(whole.Choices) != 1 {
		t.Fatalf("status %d, %+v", st, whole)
	}
	if !slices.Equal(whole.Choices[0].PromptTokenIDs, tok.Tokens) || len(whole.Choices[0].TokenIDs) != 12 {
		t.Fatalf("prompt ids %v (tokenize: %v), output ids %v", whole.Choices[0].PromptTokenIDs, tok.Tokens, whole.Choices[0].TokenIDs)
	}
	req["stream"] = true
	var ids []uint32
	var text strings.Builder
	prompts := 0
	for i, c := range streamIDs(t, p.URL+"/v1/completions", req) {
		if len(c.PromptTokenIDs) > 0 {
			prompts++
			if i != 0 || !slices.Equal(c.PromptTokenIDs, tok.Tokens) {
				t.Errorf("chunk %d has prompt ids %v", i, c.PromptTokenIDs)
			}
		}
		if len(c.TokenIDs) != 1 {
			t.Errorf("chunk %d has token ids %v; want its one token", i, c.TokenIDs)
		}
		ids = append(ids, c.TokenIDs...)
		text.WriteString(c.Text)
	}
	if prompts != 1 || !slices.Equal(ids, whole.Choices[0].TokenIDs) || text.String() != whole.Choices[0].Text {
		t.Errorf("streamed ids %v text %q; the answer's %v %q", ids, text.String(), whole.Choices[0].TokenIDs, whole.Choices[0].Text)
	}
	// A prompt of token ids continues exactly: prompt + output so far.
	cont := map[string]any{"model": "sim-model", "prompt": append(slices.Clone(tok.Tokens), ids[:5]...), "max_tokens": 7, "seed": 3, "ignore_eos": true, "return_token_ids": true}
	var c2 struct{ Choices []idsChoice }
	post(t, p.URL+"/v1/completions", cont, &c2)
	if len(c2.Choices) != 1 || !slices.Equal(c2.Choices[0].PromptTokenIDs, cont["prompt"].([]uint32)) {
		t.Errorf("continuation prompt ids %+v; want the ids sent", c2.Choices)
	}
	chat := map[string]any{"model": "sim-model", "messages": []map[string]string{{"role": "user", "content": prompt}}, "max_tokens": 6, "stream": true, "return_token_ids": true}
	n := 0
	for _, c := range streamIDs(t, p.URL+"/v1/chat/completions", chat) {
		if c.Delta != nil && c.Delta.Content != "" {
			n++
			if len(c.TokenIDs) != 1 {
				t.Errorf("chat chunk %q has token ids %v", c.Delta.Content, c.TokenIDs)
			}
		}
	}
	if n != 6 {
		t.Errorf("%d chat token chunks; want 6", n)
	}
	delete(req, "return_token_ids")
	for _, c := range streamIDs(t, p.URL+"/v1/completions", req) {
		if c.TokenIDs != nil || c.PromptTokenIDs != nil {
			t.Fatalf("token ids without return_token_ids: %+v", c)
		}
	}
}
