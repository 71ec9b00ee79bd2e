package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// models are the tokenizers make testdata fetches, and the golden files
// make golden wrote for them from the Rust tokenizers.
var models = []string{"gpt2", "llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss", "llama2", "gemma3"}

type goldenCase struct {
	Text               string   `json:"text"`
	IDs                []uint32 `json:"ids"`
	IDsSpecial         []uint32 `json:"ids_special"`
	Decoded            *string  `json:"decoded"`
	DecodedSkipSpecial *string  `json:"decoded_skip_special"`
}

type goldenFile struct {
	Model  string       `json:"model"`
	Oracle string       `json:"oracle"`
	Cases  []goldenCase `json:"cases"`
}

// testdataDir is where make testdata puts the real tokenizer files.
func testdataDir() string {
	if d := os.Getenv("LLMGW_TESTDATA"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "llmgw", "testdata")
}

var loaded sync.Map // model name -> *Tokenizer

// loadModel loads a test tokenizer once per test binary, skipping the test
// only when make testdata has not been run.
func loadModel(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	if t, ok := loaded.Load(name); ok {
		return t.(*Tokenizer)
	}
	dir := filepath.Join(testdataDir(), "models", name)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); os.IsNotExist(err) {
		if os.Getenv("CI") != "" {
			tb.Fatalf("%s/tokenizer.json is absent in CI: `make test` runs `make testdata` first", dir)
		}
		tb.Skipf("%s/tokenizer.json is absent: run `make testdata` (or set LLMGW_TESTDATA)", dir)
	}
	t, err := Load(dir)
	if err != nil {
		tb.Fatalf("Load(%s): %v", name, err)
	}
	loaded.Store(name, t)
	return t
}

func readGolden(tb testing.TB, name string) goldenFile {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var g goldenFile
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		tb.Fatalf("golden %s: %v", name, err)
	}
	return g
}

// pythonBOS lists models whose Python transformers class adds a BOS token
// that the Rust post-processor does not (see post.go): the golden ids come
// from Rust, so the expected ids with special tokens get it prepended.
var pythonBOS = map[string]uint32{"deepseek_v3": 0}

func TestGoldenEncode(t *testing.T) {
	for _, name := range models {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := loadModel(t, name)
			g := readGolden(t, name)
			if len(g.Cases) < 3000 {
				t.Fatalf("golden %s has %d cases; want at least 3000", name, len(g.Cases))
			}
			fails := 0
			for _, c := range g.Cases {
				wantSpecial := c.IDsSpecial
				if wantSpecial == nil {
					wantSpecial = c.IDs
				}
				if bos, ok := pythonBOS[name]; ok {
					wantSpecial = append([]uint32{bos}, wantSpecial...)
				}
				got := tok.Encode(c.Text, false)
				gotSpecial := tok.Encode(c.Text, true)
				if !slices.Equal(got, c.IDs) || !slices.Equal(gotSpecial, wantSpecial) {
					fails++
					if fails <= 5 {
						t.Errorf("Encode(%q):\n got %v\nwant %v\n special got %v\n special want %v", c.Text, got, c.IDs, gotSpecial, wantSpecial)
					}
				}
			}
			if fails > 0 {
				t.Errorf("%s: %d of %d golden strings differ", name, fails, len(g.Cases))
			}
		})
	}
}

func TestGoldenDecode(t *testing.T) {
	for _, name := range models {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := loadModel(t, name)
			g := readGolden(t, name)
			fails := 0
			for _, c := range g.Cases {
				want := c.Text
				if c.Decoded != nil {
					want = *c.Decoded
				}
				wantSkip := want
				if c.DecodedSkipSpecial != nil {
					wantSkip = *c.DecodedSkipSpecial
				}
				special := c.IDsSpecial
				if special == nil {
					special = c.IDs
				}
				got, gotSkip := tok.Decode(c.IDs, false), tok.Decode(special, true)
				if got != want || gotSkip != wantSkip {
					fails++
					if fails <= 5 {
						t.Errorf("Decode(%v):\n got %q\nwant %q\n skip got %q\n skip want %q", c.IDs, got, want, gotSkip, wantSkip)
					}
				}
			}
			if fails > 0 {
				t.Errorf("%s: %d of %d golden decodes differ", name, fails, len(g.Cases))
			}
		})
	}
}
