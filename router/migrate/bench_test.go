package migrate

import (
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
