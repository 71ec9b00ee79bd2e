package workload

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestB2BSaaS: llm-d's shape, 150 groups of 5 prompts of a 6,000-token
// system prompt and a 1,200-token question, fits 8,192 tokens with a
// 24-token answer unscaled; under 4,096 both shrink by 4,072/7,200.
func TestB2BSaaS(t *testing.T) {
	for _, tc := range []struct{ maxLen, system, question int }{
		{8192, 6000, 1200},
		{0, 6000, 1200},
		{4096, 3393, 678}, // 6,000 x 0.5656 = 3,393.3; 1,200 x 0.5656 = 678.7
	} {
		if s, q := B2BSaaSSizes(tc.maxLen, 24); s != tc.system || q != tc.question {
			t.Errorf("max-model-len %d: %d + %d tokens; want %d + %d", tc.maxLen, s, q, tc.system, tc.question)
		}
	}
	w, err := B2BSaaS(B2BSaaSOptions{MaxModelLen: 8192, OutputTokens: 24, Rate: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "b2b-saas" || len(w.Requests) != 750 {
		t.Fatalf("%s: %d requests; want b2b-saas, 750", w.Name, len(w.Requests))
	}
	heads := map[string]map[string]bool{} // group -> its prompts' first 6,000 tokens
	for _, r := range w.Requests {
		if len(r.Prompt) != 7200*tokenBytes {
			t.Fatalf("request %d has %d tokens; want 7200", r.ID, len(r.Prompt)/tokenBytes)
		}
		if heads[r.Group] == nil {
			heads[r.Group] = map[string]bool{}
		}
		heads[r.Group][r.Prompt[:6000*tokenBytes]] = true
	}
	if len(heads) != 150 {
		t.Errorf("%d groups; want 150", len(heads))
	}
	for g, h := range heads {
		if len(h) != 1 {
			t.Errorf("%s: %d different system prompts; want 1", g, len(h))
		}
	}
}

// TestGroupSizes: sub-agent groups of median 7 and 90th percentile 51,
// over 5,000 seeded draws.
func TestGroupSizes(t *testing.T) {
	g := newGroupSizes(7, 51, 64)
	rng := newRand(1, 99)
	sizes := make([]int, 5000)
	for i := range sizes {
		sizes[i] = g.draw(rng)
	}
	slices.Sort(sizes)
	t.Logf("median %d, 90th percentile %d", sizes[len(sizes)/2], sizes[len(sizes)*9/10])
	if m := sizes[len(sizes)/2]; m < 6 || m > 8 {
		t.Errorf("median group of %d; want 7 +- 1", m)
	}
	if p := sizes[len(sizes)*9/10]; p < 46 || p > 56 {
		t.Errorf("90th percentile group of %d; want 51 +- 5", p)
	}
	if sizes[0] < 1 || sizes[len(sizes)-1] > 64 {
		t.Errorf("sizes span %d-%d; want within 1-64", sizes[0], sizes[len(sizes)-1])
	}
}

// TestCodingAgent: over 60 seeded sessions of 12 turns, every turn
// resends the previous turn's prompt and answer; the turns add 600 tokens
// at the median, about 96% of them reuse at least 90% of their input (the
// 4% that read a large file do not), the session's calls come 2 s apart
// at the median, and sub-agents open with the head every session shares.
func TestCodingAgent(t *testing.T) {
	o := DefaultAgentOptions()
	o.Sessions = 60
	w, err := CodingAgent(o)
	if err != nil {
		t.Fatal(err)
	}
	head := w.Requests[0].Prompt[:o.HeadTokens*tokenBytes]
	last := map[string]Request{} // a session's previous main turn
	var grows []int
	var gaps []time.Duration
	turns, reused := 0, 0
	for i, r := range w.Requests {
		if r.ID != i || r.After >= i || i > 0 && r.At < w.Requests[i-1].At {
			t.Fatalf("request %d (id %d, after %d) out of arrival order", i, r.ID, r.After)
		}
		if !strings.HasPrefix(r.Prompt, head) {
			t.Fatalf("request %d does not open with the shared head", i)
		}
		if strings.Contains(r.Group, "-sub-") {
			continue
		}
		turns++
		ref := head
		if p, ok := last[r.Group]; ok {
			if !strings.HasPrefix(r.Prompt, p.Prompt) || r.After != p.ID {
				t.Fatalf("%s: turn %d does not resend and follow turn %d", r.Group, r.ID, p.ID)
			}
			ref = p.Prompt
			grows = append(grows, (len(r.Prompt)-len(p.Prompt))/tokenBytes)
			gaps = append(gaps, r.At-p.At)
		}
		if float64(len(ref)) >= 0.9*float64(len(r.Prompt)) {
			reused++
		}
		last[r.Group] = r
	}
	slices.Sort(grows)
	slices.Sort(gaps)
	t.Logf("%d turns, %.3f reuse >= 90%%, median growth %d tokens, median gap %s, %d sub-agents",
		turns, float64(reused)/float64(turns), grows[len(grows)/2], gaps[len(gaps)/2], len(w.Requests)-turns)
	if turns != 60*12 {
		t.Fatalf("%d main-agent turns; want 720", turns)
	}
	if share := float64(reused) / float64(turns); share < 0.94 || share > 0.98 {
		t.Errorf("%.3f of turns reuse >= 90%% of their input; want 0.96 +- 0.02", share)
	}
	if g := grows[len(grows)/2]; g < 570 || g > 630 {
		t.Errorf("turns add %d tokens at the median; want 600 +- 30", g)
	}
	if g := gaps[len(gaps)/2]; g < 1800*time.Millisecond || g > 2200*time.Millisecond {
		t.Errorf("calls %s apart at the median; want 2s +- 10%%", g)
	}
	if subs := len(w.Requests) - turns; subs == 0 {
		t.Error("no sub-agents")
	}
}
