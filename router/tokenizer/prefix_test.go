package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// chatTurns builds the prompts of a growing chat in a model's own format:
// prompt k holds turns 1..k and ends with the generation header.
func chatTurns(start, user, assistant, end, gen string, n int, texts []string) []string {
	var out []string
	var hist strings.Builder
	hist.WriteString(start)
	for k := 0; k < n; k++ {
		hist.WriteString(user + texts[(2*k)%len(texts)] + end)
		out = append(out, hist.String()+gen)
		hist.WriteString(assistant + texts[(2*k+1)%len(texts)] + end)
	}
	return out
}

var chatFormats = map[string][5]string{ // start, user, assistant, end, generation header
	"qwen3":    {"<|im_start|>system\nBe brief.<|im_end|>\n", "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>\n", "<|im_start|>assistant\n"},
	"llama3_1": {"<|begin_of_text|>", "<|start_header_id|>user<|end_header_id|>\n\n", "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", "<|start_header_id|>assistant<|end_header_id|>\n\n"},
	"gemma3":   {"<bos>", "<start_of_turn>user\n", "<start_of_turn>model\n", "<end_of_turn>\n", "<start_of_turn>model\n"},
	"llama2":   {"<s>", "[INST] ", " [/INST]", "</s>", ""},
	"gpt2":     {"", "User: ", "Bot: ", "<|endoftext|>", "Bot:"},
}

func goldenTexts(t testing.TB, model string) []string {
	g := readGolden(t, model)
	var out []string
	for _, c := range g.Cases {
		out = append(out, c.Text)
	}
	return out
}

func TestPrefixCacheMatchesEncode(t *testing.T) {
	t.Parallel()
	for model, f := range chatFormats {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			tok := loadModel(t, model)
			texts := goldenTexts(t, model)
			rng := rand.New(rand.NewPCG(1, 2))
			rng.Shuffle(len(texts), func(i, j int) { texts[i], texts[j] = texts[j], texts[i] })
			for conv := 0; conv < 20; conv++ {
				c := NewPrefixCache(tok, 4)
				turns := chatTurns(f[0], f[1], f[2], f[3], f[4], 12, texts[conv*24:])
				for k, prompt := range turns {
					for _, special := range []bool{false, true} {
						got, want := c.Encode(prompt, special), tok.Encode(prompt, special)
						if !slices.Equal(got, want) {
							t.Fatalf("conversation %d turn %d (special %v): cache gave\n%v\nwant\n%v", conv, k, special, got, want)
						}
					}
				}
				if c.reused == 0 {
					t.Errorf("conversation %d: nothing was served from the cache", conv)
				}
			}
		})
	}
}

// Random texts around added tokens, re-encoded with random edits at the end,
// must still match a fresh encode.
func TestPrefixCacheRandomEdits(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"qwen3", "llama2", "deepseek_v3"} {
		tok := loadModel(t, model)
		texts := goldenTexts(t, model)
		rng := rand.New(rand.NewPCG(3, 4))
		c := NewPrefixCache(tok, 3)
		base := ""
		for i := 0; i < 400; i++ {
			switch rng.IntN(4) {
			case 0: // start over
				base = texts[rng.IntN(len(texts))]
			case 1: // cut back to a random byte
				base = base[:rng.IntN(len(base)+1)]
			default: // grow
				base += texts[rng.IntN(len(texts))]
			}
			got, want := c.Encode(base, true), tok.Encode(base, true)
			if !slices.Equal(got, want) {
				t.Fatalf("%s step %d: cache differs on %q\n got %v\nwant %v", model, i, base, got, want)
			}
		}
	}
}

func TestPrefixCacheEvicts(t *testing.T) {
	t.Parallel()
	tok := loadModel(t, "qwen3")
	c := NewPrefixCache(tok, 2)
	for i := 0; i < 10; i++ {
		c.Encode(fmt.Sprintf("<|im_start|>system\nYou are a helpful assistant. Answer in English, briefly, and cite your sources.<|im_end|>\n<|im_start|>user\n%d<|im_end|>", i), false)
	}
	if c.lru.Len() != 2 {
		t.Errorf("cache holds %d texts; want 2", c.lru.Len())
	}
	n := 0
	for _, es := range c.byHead {
		n += len(es)
	}
	if n != 2 {
		t.Errorf("cache indexes %d texts; want 2", n)
	}
	if c.reused == 0 {
		t.Error("the shared system prompt was never reused")
	}
}

func TestCommonPrefix(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("abcdefgh", 20)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abd", 2}, {"abc", "abcdef", 3}, {long, long, len(long)},
		{long + "x", long + "y", len(long)}, {long[:70] + "Z" + long[71:], long, 70},
	} {
		if got := commonPrefix(tc.a, tc.b); got != tc.want {
			t.Errorf("commonPrefix(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
