package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// failing is an engine's body that sends data, then fails with err.
type failing struct {
	r   io.Reader
	err error
}

func (f *failing) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, f.err
	}
	return n, err
}

func (f *failing) Close() error { return nil }

// canned answers each continuation with the next body, recording what it
// was sent.
type canned struct {
	bodies []string
	sent   [][]byte
	failed [][]string
}

func (c *canned) Reissue(_ context.Context, body []byte, failed []string) (io.ReadCloser, string, error) {
	c.sent = append(c.sent, body)
	c.failed = append(c.failed, append([]string(nil), failed...))
	if len(c.bodies) == 0 {
		return nil, "", errors.New("no replica left")
	}
	b := c.bodies[0]
	c.bodies = c.bodies[1:]
	return &failing{r: strings.NewReader(b), err: io.EOF}, fmt.Sprintf("r%d", len(c.sent)), nil
}

// completionEvents renders a vLLM completions stream of ids (as text
// "<id>"), its first chunk with the prompt ids, the last with a finish
// reason when final, then usage and [DONE] when final.
func completionEvents(id string, created int, prompt, ids []uint32, final bool) string {
	var sb strings.Builder
	for i, tok := range ids {
		c := map[string]any{"id": id, "object": "text_completion", "created": created, "model": "m",
			"choices": []map[string]any{{"index": 0, "text": fmt.Sprintf("<%d>", tok), "token_ids": []uint32{tok}}}}
		ch := c["choices"].([]map[string]any)[0]
		if i == 0 {
			ch["prompt_token_ids"] = prompt
		}
		if final && i == len(ids)-1 {
			ch["finish_reason"] = "length"
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(&sb, "data: %s\n\n", b)
	}
	if final {
		u, _ := json.Marshal(map[string]any{"id": id, "object": "text_completion", "created": created, "model": "m", "choices": []any{},
			"usage": map[string]int{"prompt_tokens": len(prompt), "completion_tokens": len(ids), "total_tokens": len(prompt) + len(ids)}})
		fmt.Fprintf(&sb, "data: %s\n\ndata: [DONE]\n\n", u)
	}
	return sb.String()
}

// TestStreamSplices: a completions stream broken after k tokens goes on
// with the continuation; the client's stream has every token once, the
// first stream's id and created, usage for the whole answer, one [DONE],
// and no token ids it did not ask for.
func TestStreamSplices(t *testing.T) {
	t.Parallel()
	prompt := []uint32{100, 101, 102}
	all := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	for _, breakWith := range []string{"reset", "eof", "error event"} {
		for k := 1; k < len(all); k++ {
			t.Run(fmt.Sprintf("%s/%d", breakWith, k), func(t *testing.T) {
				first := completionEvents("cmpl-a", 1, prompt, all[:k], false)
				err := errors.New("connection reset by peer")
				switch breakWith {
				case "eof":
					err = io.EOF
				case "error event":
					first += `data: {"error":{"message":"engine died","code":500}}` + "\n\ndata: [DONE]\n\n"
					err = io.EOF
				}
				first += `data: {"choices":[{"text":"<partial`
				cont := append(append([]uint32{}, prompt...), all[:k]...)
				re := &canned{bodies: []string{completionEvents("cmpl-b", 2, cont, all[k:], true)}}
				p := mustPlan(t, openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": len(all), "stream_options": map[string]bool{"include_usage": true}})
				s := NewStream(t.Context(), &failing{r: strings.NewReader(first), err: err}, "a", p, re, Limits{MaxAttempts: 1, MaxTokens: 100}, Hooks{}, 0)
				out, rerr := io.ReadAll(s)
				if rerr != nil {
					t.Fatal(rerr)
				}
				got := string(out)
				var want strings.Builder
				for _, tok := range all {
					fmt.Fprintf(&want, "<%d>", tok)
				}
				if text := texts(t, got); text != want.String() {
					t.Errorf("text %q; want %q", text, want.String())
				}
				if strings.Count(got, "[DONE]") != 1 || !strings.HasSuffix(got, "data: [DONE]\n\n") || strings.Contains(got, "cmpl-b") ||
					strings.Contains(got, `"created":2`) || strings.Contains(got, "token_ids") || strings.Contains(got, "error") {
					t.Errorf("stream:\n%s", got)
				}
				if !strings.Contains(got, fmt.Sprintf(`"completion_tokens":%d`, len(all))) || !strings.Contains(got, `"prompt_tokens":3`) ||
					!strings.Contains(got, fmt.Sprintf(`"total_tokens":%d`, 3+len(all))) {
					t.Errorf("usage does not count the whole answer:\n%s", got)
				}
				var c continued
				if len(re.sent) != 1 || json.Unmarshal(re.sent[0], &c) != nil || fmt.Sprint(c.Prompt) != fmt.Sprint(cont) || *c.MaxTokens != len(all)-k {
					t.Errorf("continuation %s; want prompt %v and max_tokens %d", re.sent, cont, len(all)-k)
				}
				if fmt.Sprint(re.failed) != "[[a]]" {
					t.Errorf("failed replicas %v; want [[a]]", re.failed)
				}
			})
		}
	}
}

// texts joins the text of a completions stream's chunks.
func texts(t *testing.T, stream string) string {
	t.Helper()
	var sb strings.Builder
	for _, ev := range strings.Split(stream, "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		sb.WriteString(c.text())
	}
	return sb.String()
}

// TestStreamRefuses: a stream that cannot move ends with an error event
// that names why, then [DONE], and the hook hears the reason.
func TestStreamRefuses(t *testing.T) {
	t.Parallel()
	prompt := []uint32{9}
	cases := []struct {
		name   string
		first  string
		limits Limits
		re     *canned
		reason string
	}{
		{"attempts", completionEvents("x", 1, prompt, []uint32{1, 2}, false), Limits{MaxAttempts: 0, MaxTokens: 10}, &canned{}, ReasonAttempts},
		{"budget", completionEvents("x", 1, prompt, []uint32{1, 2, 3}, false), Limits{MaxAttempts: 1, MaxTokens: 2}, &canned{}, ReasonBudget},
		{"no replica", completionEvents("x", 1, prompt, []uint32{1}, false), Limits{MaxAttempts: 3, MaxTokens: 10}, &canned{}, ReasonNoReplica},
		{"no token ids", `data: {"id":"x","choices":[{"text":"hi"}]}` + "\n\n", Limits{MaxAttempts: 3, MaxTokens: 10}, &canned{}, ReasonNoTokenIDs},
		{"unparsed", "data: not json\n\n", Limits{MaxAttempts: 3, MaxTokens: 10}, &canned{}, ReasonUnparsed},
		{"exhausted", completionEvents("x", 1, prompt, []uint32{1, 2, 3, 4}, false), Limits{MaxAttempts: 3, MaxTokens: 10}, &canned{}, ReasonExhausted},
		{"second failure", completionEvents("x", 1, prompt, []uint32{1}, false), Limits{MaxAttempts: 1, MaxTokens: 10},
			&canned{bodies: []string{completionEvents("y", 2, prompt, []uint32{2}, false)}}, ReasonAttempts},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustPlan(t, openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": 4})
			var heard string
			h := Hooks{Refused: func(_, reason string, _ error) { heard = reason }}
			s := NewStream(t.Context(), &failing{r: strings.NewReader(tc.first), err: io.ErrUnexpectedEOF}, "a", p, tc.re, tc.limits, h, 0)
			out, err := io.ReadAll(s)
			if err != nil {
				t.Fatal(err)
			}
			got := string(out)
			if heard != tc.reason || !strings.Contains(got, `"error"`) || !strings.Contains(got, "not migrated") || tc.reason == ReasonUnparsed && !strings.HasPrefix(got, "data: not json\n\n") ||
				strings.Count(got, "[DONE]") != 1 || !strings.HasSuffix(got, "data: [DONE]\n\n") {
				t.Errorf("reason %q; stream:\n%s", heard, got)
			}
		})
	}
}

// TestStreamWholeAnswer: a replica that fails after its last token (and
// before its usage and [DONE]) needs no continuation: the client gets the
// usage it asked for and [DONE].
func TestStreamWholeAnswer(t *testing.T) {
	t.Parallel()
	all := []uint32{1, 2, 3}
	first := completionEvents("x", 1, []uint32{7, 8}, all, true)
	cut := strings.Index(first, `"usage"`)
	first = first[:strings.LastIndex(first[:cut], "data: ")]
	p := mustPlan(t, openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": 3, "stream_options": map[string]bool{"include_usage": true}})
	re := &canned{}
	s := NewStream(t.Context(), &failing{r: strings.NewReader(first), err: io.ErrUnexpectedEOF}, "a", p, re, Limits{MaxAttempts: 1, MaxTokens: 10}, Hooks{}, 0)
	out, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	if len(re.sent) != 0 || strings.Count(got, "[DONE]") != 1 || !strings.Contains(got, `"completion_tokens":3`) || !strings.Contains(got, `"prompt_tokens":2`) {
		t.Errorf("continuations %d; stream:\n%s", len(re.sent), got)
	}
}

// FuzzStream: whatever two engines send, the client's stream ends with
// one [DONE] and Stream does not panic or loop.
func FuzzStream(f *testing.F) {
	f.Add(completionEvents("x", 1, []uint32{1}, []uint32{2, 3}, false), completionEvents("y", 2, []uint32{1, 2, 3}, []uint32{4}, true), false)
	f.Add("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"token_ids\":[5]}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"token_ids\":[6],\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", true)
	f.Add("data: [DONE]\n\n", "", false)
	f.Add(": comment\n\ndata: {\"error\":{}}\n\n", "data: {bad\n\n", true)
	f.Fuzz(func(t *testing.T, first, second string, chat bool) {
		kind, body := openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": 50}
		if chat {
			kind, body = openai.Chat, map[string]any{"messages": []map[string]string{{"role": "user", "content": "q"}}, "stream": true,
				"stream_options": map[string]bool{"include_usage": true}}
		}
		p := mustPlan(t, kind, body)
		re := &canned{bodies: []string{second, second}}
		s := NewStream(context.Background(), &failing{r: strings.NewReader(first), err: io.ErrUnexpectedEOF}, "a", p, re, Limits{MaxAttempts: 2, MaxTokens: 100}, Hooks{}, 3)
		out, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
			t.Fatalf("stream ends %q", out[max(0, len(out)-100):])
		}
	})
}

// leaving cancels its context when a continuation is asked for, as a
// client that goes away then does.
type leaving struct{ cancel context.CancelFunc }

func (l leaving) Reissue(ctx context.Context, _ []byte, _ []string) (io.ReadCloser, string, error) {
	l.cancel()
	return nil, "", ctx.Err()
}

// TestStreamClientLeft: a client gone while the continuation is sent gets
// nothing more (the token it had, no error event, no [DONE]), and no
// refusal is counted for it.
func TestStreamClientLeft(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := mustPlan(t, openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": 4})
	refused := false
	first := completionEvents("x", 1, []uint32{9}, []uint32{1}, false)
	s := NewStream(ctx, &failing{r: strings.NewReader(first), err: io.ErrUnexpectedEOF}, "a", p, leaving{cancel}, Limits{MaxAttempts: 1, MaxTokens: 10},
		Hooks{Refused: func(string, string, error) { refused = true }}, 0)
	out, _ := io.ReadAll(s)
	if got := string(out); refused || strings.Contains(got, "error") || strings.Contains(got, "[DONE]") || !strings.Contains(got, `\u003c1\u003e`) {
		t.Errorf("refused %v; stream:\n%s", refused, out)
	}
}
