package migrate

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/openai"
)

// BenchmarkStream measures what Stream adds per chunk of a healthy
// stream: parsing each event, recording its ids, and re-encoding it
// without the token ids the client did not ask for (ClientIDs: passed
// through as is).
func BenchmarkStream(b *testing.B) {
	ids := make([]uint32, 256)
	for i := range ids {
		ids[i] = uint32(1000 + i)
	}
	body := completionEvents("cmpl-bench", 1, make([]uint32, 2000), ids, true)
	for _, tc := range []struct {
		name      string
		clientIDs bool
	}{{"Stripped", false}, {"ClientIDs", true}} {
		b.Run(tc.name, func(b *testing.B) {
			p := mustPlan(b, openai.Completion, map[string]any{"prompt": "p", "stream": true, "max_tokens": 256, "return_token_ids": tc.clientIDs})
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s := NewStream(b.Context(), io.NopCloser(strings.NewReader(body)), "a", p, nil, Limits{}, Hooks{}, 0)
				if _, err := io.Copy(io.Discard, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ids)), "ns/chunk")
		})
	}
}

// BenchmarkPlan measures what migration adds to every streamed request
// before it is sent: Check reads the body, Forward writes the one the
// replica gets. Bodies are a long chat history and a long completion
// prompt (about 32k tokens of text each).
func BenchmarkPlan(b *testing.B) {
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 3000) // 132 KB
	msgs := []map[string]string{{"role": "system", "content": long[:len(long)/2]}}
	for i := 0; i < 32; i++ {
		msgs = append(msgs, map[string]string{"role": "user", "content": long[:len(long)/64]}, map[string]string{"role": "assistant", "content": long[:len(long)/64]})
	}
	for _, tc := range []struct {
		name string
		kind openai.Kind
		body map[string]any
	}{
		{"Chat", openai.Chat, map[string]any{"model": "m", "stream": true, "max_tokens": 256, "messages": msgs}},
		{"Completion", openai.Completion, map[string]any{"model": "m", "stream": true, "max_tokens": 256, "prompt": long}},
	} {
		body, err := json.Marshal(tc.body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				p, r, err := Check(tc.kind, body)
				if err != nil || r != nil || p == nil {
					b.Fatalf("Check = %v, %v, %v", p, r, err)
				}
				if len(p.Forward()) < len(body) {
					b.Fatal("Forward lost part of the body")
				}
			}
		})
	}
}
