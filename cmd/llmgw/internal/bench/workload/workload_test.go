package workload

import (
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/trace"
)

func TestWordsAreExactTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 7, 100, 513} {
		w := Request{Prompt: words(rng, n)}
		toks := simTokens(&w)
		if len(toks) != n || len(w.Prompt) != 3*n {
			t.Fatalf("words(%d): %d tokens, %d bytes; want %d and %d", n, len(toks), len(w.Prompt), n, 3*n)
		}
		for k := range n {
			cut := Request{Prompt: w.Prompt[:3*k]}
			if got := simTokens(&cut); !slices.Equal(got, toks[:k]) {
				t.Fatalf("words(%d) cut to %d tokens encodes as %v; want %v", n, k, got, toks[:k])
			}
		}
	}
}

func TestChat(t *testing.T) {
	o := ChatOptions{Users: 3, Rounds: 4, SystemTokens: 50, DocTokens: 30, UserTokens: 10, ReplyTokens: 8, Rate: 5, Seed: 9}
	w, err := Chat(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Requests) != 12 {
		t.Fatalf("got %d requests; want 12", len(w.Requests))
	}
	toks := simTokenLists(w)
	for k, r := range w.Requests {
		if r.ID != k || r.MaxTokens != 8 || r.Path() != "/v1/chat/completions" {
			t.Errorf("request %d: %+v", k, r)
		}
		if k > 0 && r.At < w.Requests[k-1].At {
			t.Errorf("request %d arrives before request %d", k, k-1)
		}
		round := k / 3
		if n := len(r.Messages[1].Content); n != 3*(30+10) {
			t.Errorf("request %d opens with %d bytes; want the 40-token document and question", k, n)
		}
		if len(r.Messages) != 2+2*round || r.Messages[0].Content != w.Requests[0].Messages[0].Content {
			t.Errorf("request %d has %d messages; want %d after the shared system prompt", k, len(r.Messages), 2+2*round)
		}
		if round == 0 {
			if r.After != -1 {
				t.Errorf("first round request %d waits for %d", k, r.After)
			}
			continue
		}
		prev := w.Requests[r.After]
		if r.After != k-3 || prev.Group != r.Group {
			t.Errorf("request %d waits for %d (%s); want %d of %s", k, r.After, prev.Group, k-3, r.Group)
		}
		// The history grows: the previous round's whole prompt, generation
		// prompt included, starts this one.
		if p := toks[r.After]; len(toks[k]) <= len(p) || !slices.Equal(toks[k][:len(p)], p) {
			t.Errorf("request %d does not extend round %d's prompt", k, r.After)
		}
	}
	again, _ := Chat(o)
	if !reflect.DeepEqual(w, again) {
		t.Error("same options and seed gave different workloads")
	}
	o.Seed++
	other, _ := Chat(o)
	if reflect.DeepEqual(w.Requests[0].Messages, other.Requests[0].Messages) {
		t.Error("another seed gave the same prompts")
	}
}

func TestSharedPrefix(t *testing.T) {
	w, err := SharedPrefix(PrefixOptions{Groups: 3, PerGroup: 5, PrefixTokens: 64, SuffixTokens: 16, OutputTokens: 4, Rate: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	byGroup := map[string][][]uint32{}
	for _, r := range w.Requests {
		toks := simTokens(&r)
		if len(toks) != 80 || r.After != -1 || r.Path() != "/v1/completions" {
			t.Fatalf("request %d: %d tokens, after %d; want 80, -1", r.ID, len(toks), r.After)
		}
		byGroup[r.Group] = append(byGroup[r.Group], toks)
	}
	if len(byGroup) != 3 {
		t.Fatalf("got %d groups; want 3", len(byGroup))
	}
	for g, list := range byGroup {
		if len(list) != 5 {
			t.Errorf("group %s has %d requests; want 5", g, len(list))
		}
		for _, toks := range list[1:] {
			if !slices.Equal(toks[:64], list[0][:64]) || slices.Equal(toks, list[0]) {
				t.Errorf("group %s: requests must share exactly the 64-token prefix", g)
			}
		}
	}
}

func TestSiblings(t *testing.T) {
	w, err := Siblings(SiblingOptions{Prompts: 4, Samples: 3, SystemTokens: 20, PromptTokens: 30, OutputTokens: 2, Rate: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Requests) != 12 {
		t.Fatalf("got %d requests; want 12", len(w.Requests))
	}
	for k := 0; k < 12; k += 3 {
		burst := w.Requests[k : k+3]
		for _, r := range burst[1:] {
			if r.Prompt != burst[0].Prompt || r.At != burst[0].At {
				t.Errorf("burst at %d: siblings differ in prompt or arrival", k)
			}
		}
		if k > 0 && burst[0].Prompt == w.Requests[0].Prompt {
			t.Errorf("burst at %d repeats the first prompt", k)
		}
		if n := len(simTokens(&burst[0])); n != 50 {
			t.Errorf("burst at %d: %d tokens; want 50", k, n)
		}
	}
}

func TestReplay(t *testing.T) {
	f, err := os.Open("../trace/testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Parse(f, trace.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Replay(tr, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	toks := simTokenLists(w)
	for k, e := range tr.Entries {
		r := w.Requests[k]
		if len(toks[k]) != e.InputLength || r.MaxTokens != e.OutputLength {
			t.Fatalf("entry %d: %d tokens, max %d; want %d and %d", k, len(toks[k]), r.MaxTokens, e.InputLength, e.OutputLength)
		}
		if want := time.Duration(e.Timestamp-tr.Entries[0].Timestamp) * time.Millisecond; r.At != want {
			t.Errorf("entry %d at %v; want %v", k, r.At, want)
		}
	}
	// Equal leading hash ids are equal token blocks; the first differing id
	// starts a different block.
	bs := tr.BlockSize
	for i := range tr.Entries {
		for j := range i {
			a, b := tr.Entries[i].HashIDs, tr.Entries[j].HashIDs
			n := 0
			for n < min(len(a), len(b)) && a[n] == b[n] {
				n++
			}
			shared := min(n*bs, len(toks[i]), len(toks[j]))
			if !slices.Equal(toks[i][:shared], toks[j][:shared]) {
				t.Fatalf("entries %d and %d share %d ids but not their tokens", i, j, n)
			}
			if end := min((n+1)*bs, len(toks[i]), len(toks[j])); end > shared && slices.Equal(toks[i][shared:end], toks[j][shared:end]) {
				t.Fatalf("entries %d and %d differ at block %d but their tokens agree", i, j, n)
			}
		}
	}
	fast, _ := Replay(tr, ReplayOptions{Rate: 100, MaxRequests: 10, Seed: 1})
	if len(fast.Requests) != 10 || fast.Requests[9].At > 2*time.Second {
		t.Errorf("rate 100 replay of 10: %d requests, last at %v", len(fast.Requests), fast.Requests[len(fast.Requests)-1].At)
	}
}

func TestPoissonRate(t *testing.T) {
	at := poisson(rand.New(rand.NewPCG(5, 5)), 4000, 20)
	mean := at[len(at)-1].Seconds() / float64(len(at))
	if mean < 0.045 || mean > 0.055 {
		t.Errorf("mean gap %.4fs at 20/s; want about 0.05s", mean)
	}
	if got := poisson(rand.New(rand.NewPCG(5, 5)), 3, 0); !slices.Equal(got, make([]time.Duration, 3)) {
		t.Errorf("rate 0: %v; want all at 0", got)
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := Chat(ChatOptions{Users: 0, Rounds: 1, UserTokens: 1, ReplyTokens: 1}); err == nil {
		t.Error("chat with no users: no error")
	}
	if _, err := SharedPrefix(PrefixOptions{Groups: 1}); err == nil {
		t.Error("shared prefix without lengths: no error")
	}
	if _, err := Siblings(SiblingOptions{Prompts: 1, Samples: 0}); err == nil {
		t.Error("siblings with no samples: no error")
	}
	if _, err := Replay(trace.Trace{}, ReplayOptions{}); err == nil {
		t.Error("empty trace: no error")
	}
}
