package blockkey

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// layout computes a key from the documented layout the slow, obvious way,
// so the test pins the documentation rather than the implementation.
func layout(parent Key, tokens []uint32, extra Extra) Key {
	seed := uint64(parent)
	if len(extra) > 0 {
		seed = xxh3.HashSeed(extra, seed^0x9E3779B97F4A7C15)
	}
	var b []byte
	for _, t := range tokens {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	return Key(xxh3.HashSeed(b, seed))
}

func seqTokens(n int, start uint32) []uint32 {
	ts := make([]uint32, n)
	for i := range ts {
		ts[i] = start + uint32(i)*7919
	}
	return ts
}

// chainCases cover the paths of Chain: in place, on the stack, beyond it.
var chainCases = []struct {
	name   string
	tokens []uint32
	extra  Extra
}{
	{"empty", nil, nil},
	{"block16", seqTokens(16, 1), nil},
	{"block16 salted", seqTokens(16, 1), Extra(nil).AppendString("salt")},
	{"stack limit", seqTokens(stackTokens, 3), nil},
	{"beyond stack", seqTokens(stackTokens+1, 3), Extra(nil).AppendString("salt")},
	{"large block", seqTokens(1000, 5), nil},
}

func TestChainMatchesDocumentedLayout(t *testing.T) {
	t.Parallel()
	parent := Root("")
	for _, tt := range chainCases {
		t.Run(tt.name, func(t *testing.T) {
			want := layout(parent, tt.tokens, tt.extra)
			if got := Chain(parent, tt.tokens, tt.extra); got != want {
				t.Errorf("Chain = %#x; want %#x", got, want)
			}
		})
	}
}

// TestPortablePath runs Chain as on a big-endian machine (tokens copied in
// the layout's byte order) and checks it agrees with the layout.
func TestPortablePath(t *testing.T) {
	toks := seqTokens(100, 7)
	native := Keys(nil, Root(""), toks, 16)
	saved := nativeLE
	nativeLE = false
	t.Cleanup(func() { nativeLE = saved })
	if d := Keys(nil, Root(""), toks, 16); !slices.Equal(d, native) {
		t.Errorf("portable Keys = %#x; in place %#x", d, native)
	}
	parent := Root("lora")
	for _, tt := range chainCases {
		want := layout(parent, tt.tokens, tt.extra)
		if got := Chain(parent, tt.tokens, tt.extra); got != want {
			t.Errorf("%s: portable Chain = %#x; want %#x", tt.name, got, want)
		}
	}
}

func TestChainDoesNotAllocate(t *testing.T) {
	toks := seqTokens(16, 1)
	salt := Extra(nil).AppendString("salt")
	parent := Root("")
	if n := testing.AllocsPerRun(100, func() { parent = Chain(parent, toks, salt) }); n != 0 {
		t.Errorf("Chain allocates %v times per call; want 0", n)
	}
}

func TestRootLayout(t *testing.T) {
	t.Parallel()
	for _, lora := range []string{"", "sql-adapter"} {
		want := Key(xxh3.HashString("llmgw/blockkey/v2\x00" + lora))
		if got := Root(lora); got != want {
			t.Errorf("Root(%q) = %#x; want %#x", lora, got, want)
		}
	}
	if Root("") == Root("a") {
		t.Error("LoRA name not mixed into the root")
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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
	t.Parallel()
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
		{"extra spelt as a block", Chain(r, a, Extra(nil).AppendString("abc")), Chain(Chain(r, bytesAsTokens(Extra(nil).AppendString("abc")), nil), a, nil)},
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
	t.Parallel()
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

// bytesAsTokens reads b (a multiple of 4 bytes long) as little-endian
// token ids.
func bytesAsTokens(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// FuzzChain checks Chain against the documented layout for any tokens and
// extra bytes.
func FuzzChain(f *testing.F) {
	f.Add(uint64(0), []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte(nil))
	f.Add(uint64(1)<<63, make([]byte, 4*stackTokens+4), []byte("s\x04\x00\x00\x00salt"))
	f.Fuzz(func(t *testing.T, parent uint64, raw, extra []byte) {
		toks := bytesAsTokens(raw[:len(raw)&^3])
		if got, want := Chain(Key(parent), toks, extra), layout(Key(parent), toks, extra); got != want {
			t.Fatalf("Chain = %#x; want %#x", got, want)
		}
	})
}
