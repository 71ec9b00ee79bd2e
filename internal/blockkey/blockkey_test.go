package blockkey

import (
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// layout writes the documented byte layout the slow, obvious way, so the
// test pins the documentation rather than the implementation.
func layout(parent Key, tokens []uint32, extra Extra) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(parent))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tokens)))
	for _, t := range tokens {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(extra)))
	return append(b, extra...)
}

func seqTokens(n int, start uint32) []uint32 {
	ts := make([]uint32, n)
	for i := range ts {
		ts[i] = start + uint32(i)*7919
	}
	return ts
}

func TestChainMatchesDocumentedLayout(t *testing.T) {
	salt := Extra(nil).AppendString("salt")
	tests := []struct {
		name   string
		tokens []uint32
		extra  Extra
	}{
		{"empty", nil, nil},
		{"block16", seqTokens(16, 1), nil},
		{"block16 salted", seqTokens(16, 1), salt},
		{"stack limit", seqTokens(maxStackTokens, 3), nil},
		{"beyond stack", seqTokens(maxStackTokens+1, 3), salt},
		{"large block", seqTokens(1000, 5), nil},
	}
	parent := Root("")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Key(xxhash.Sum64(layout(parent, tt.tokens, tt.extra)))
			if got := Chain(parent, tt.tokens, tt.extra); got != want {
				t.Errorf("Chain = %#x; want %#x", got, want)
			}
		})
	}
}

func TestRootLayout(t *testing.T) {
	for _, lora := range []string{"", "sql-adapter"} {
		want := Key(xxhash.Sum64String("llmgw/blockkey/v1\x00" + lora))
		if got := Root(lora); got != want {
			t.Errorf("Root(%q) = %#x; want %#x", lora, got, want)
		}
	}
	if Root("") == Root("a") {
		t.Error("LoRA name not mixed into the root")
	}
}

// TestGolden pins concrete values so that an accidental layout change (which
// would silently split driver and router keys across versions) fails here.
func TestGolden(t *testing.T) {
	keys := Keys(nil, Root(""), []uint32{151644, 872, 198, 9064, 374, 279, 6722, 315}, 4)
	want := []Key{goldenBlock0, goldenBlock1}
	if len(keys) != len(want) {
		t.Fatalf("%d keys; want %d", len(keys), len(want))
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("key %d = %#x; want %#x", i, keys[i], want[i])
		}
	}
}

func TestKeys(t *testing.T) {
	toks := seqTokens(40, 9)
	tests := []struct {
		name      string
		blockSize int
		want      int
	}{
		{"exact blocks", 8, 5},
		{"partial tail dropped", 16, 2},
		{"too short", 64, 0},
		{"zero block size", 0, 0},
		{"negative block size", -4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Keys(nil, Root(""), toks, tt.blockSize)
			if len(got) != tt.want {
				t.Fatalf("%d keys; want %d", len(got), tt.want)
			}
			parent := Root("")
			for i, k := range got {
				want := Chain(parent, toks[i*tt.blockSize:(i+1)*tt.blockSize], nil)
				if k != want {
					t.Errorf("key %d = %#x; want %#x", i, k, want)
				}
				parent = want
			}
		})
	}
}

func TestKeysDiffer(t *testing.T) {
	a := seqTokens(16, 1)
	b := seqTokens(16, 2)
	r := Root("")
	pairs := []struct {
		name string
		x, y Key
	}{
		{"tokens", Chain(r, a, nil), Chain(r, b, nil)},
		{"parent", Chain(r, a, nil), Chain(Root("lora"), a, nil)},
		{"extra", Chain(r, a, nil), Chain(r, a, Extra(nil).AppendString("s"))},
		{"extra kinds", Chain(r, a, Extra(nil).AppendString("1")), Chain(r, a, Extra(nil).AppendInt(1))},
		{"list nesting", Chain(r, a, Extra(nil).AppendList(1).AppendInt(1)), Chain(r, a, Extra(nil).AppendInt(1))},
		{"bytes vs string", Chain(r, a, Extra(nil).AppendBytes([]byte("x"))), Chain(r, a, Extra(nil).AppendString("x"))},
		{"nil vs float", Chain(r, a, Extra(nil).AppendNil()), Chain(r, a, Extra(nil).AppendFloat(0))},
		{"split", Chain(r, a[:8], nil), Chain(r, a, nil)},
	}
	for _, p := range pairs {
		if p.x == p.y {
			t.Errorf("%s: keys equal (%#x)", p.name, p.x)
		}
	}
}

func BenchmarkChain16(b *testing.B) {
	toks := seqTokens(16, 1)
	parent := Root("")
	b.ReportAllocs()
	b.SetBytes(16 * 4)
	for b.Loop() {
		parent = Chain(parent, toks, nil)
	}
}

func BenchmarkKeys4096Tokens(b *testing.B) {
	toks := seqTokens(4096, 1)
	dst := make([]Key, 0, 256)
	b.ReportAllocs()
	b.SetBytes(4096 * 4)
	for b.Loop() {
		dst = Keys(dst[:0], Root(""), toks, 16)
	}
}

func TestPromptKeys(t *testing.T) {
	toks := seqTokens(40, 3)
	salt := Extra(nil).AppendString("s1")
	first := Chain(Root("sql"), toks[:16], salt)
	want := []Key{first, Chain(first, toks[16:32], nil)}
	got := PromptKeys(nil, "sql", "s1", toks, 16)
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("salted keys %v; want %v", got, want)
	}
	plain := PromptKeys(nil, "", "", toks, 16)
	if want := Keys(nil, Root(""), toks, 16); len(plain) != 2 || plain[0] != want[0] || plain[1] != want[1] {
		t.Errorf("plain keys %v; want %v", plain, want)
	}
	if got := PromptKeys(nil, "", "s", toks[:15], 16); len(got) != 0 {
		t.Errorf("keys for a partial block: %v", got)
	}
}
