package peers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/load"
)

// noIP is the source of messages put directly, with no Lister to check.
var noIP netip.Addr

// compactOf encodes a message as a publisher would for a target holding
// the directory's first from names.
func compactOf(router string, seq, gen uint64, names []string, from int, reps []compactReplica, tenants []Tenant) []byte {
	c := compactBody{router: router, seq: seq, gen: gen, tail: appendCompactTail(nil, reps, tenants)}
	return c.encode(names, from)
}

func TestCompactRoundTrip(t *testing.T) {
	t.Parallel()
	names := []string{"alloc-1/vllm", "alloc-2/vllm", "alloc-3/vllm"}
	reps := []compactReplica{{Index: 0, InFlight: 2, InFlightTokens: 9000, PrefillTokens: 4000}, {Index: 2, InFlight: 1_000_000_000}}
	tenants := []Tenant{{Name: "team-a", Requests: 1 << 53, Tokens: 12, InFlight: 3, Streams: 1}}
	for _, from := range []int{0, 1, 3} {
		m, err := decodeCompact(compactOf("r1", 7, 42, names, from, reps, tenants))
		if err != nil {
			t.Fatalf("from %d: %v", from, err)
		}
		var got []string
		for _, n := range m.Names {
			got = append(got, string(n))
		}
		if m.Router != "r1" || m.Seq != 7 || m.DirGen != 42 || m.DirFrom != from || strings.Join(got, ",") != strings.Join(names[from:], ",") ||
			fmt.Sprint(m.Replicas) != fmt.Sprint(reps) || fmt.Sprint(m.Tenants) != fmt.Sprint(tenants) {
			t.Errorf("from %d: decoded %+v", from, m)
		}
	}
}

func TestDecodeCompactRefusesBadMessages(t *testing.T) {
	t.Parallel()
	good := compactOf("r1", 1, 9, []string{"a", "b"}, 0, []compactReplica{{Index: 1, InFlight: 1}}, nil)
	uv := func(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
	head := func(gen, from, names uint64) []byte {
		b := append([]byte("LGP3"), 2, 'r', '1', 1)
		return uv(uv(uv(b, gen), from), names)
	}
	for _, tc := range []struct {
		name, want string
		body       []byte
	}{
		{"no magic", "without its magic", []byte(`{"version":2}`)},
		{"truncated", "tenants: truncated", good[:len(good)-1]},
		{"fewer bytes than replicas", "1 replicas in 2 bytes", good[:len(good)-3]},
		{"trailing bytes", "bytes after the message", append(bytes.Clone(good), 0)},
		{"zero generation", "non-zero generation", uv(uv(head(0, 0, 0), 0), 0)},
		{"directory too long", "at most 8192 names", uv(uv(head(1, 8000, 500), 0), 0)},
		{"empty name", "names[0] must have 1 to 512 bytes", uv(head(1, 0, 1), 0)},
		{"count out of range", "in_flight 1000000001, in_flight_tokens 0, prefill_tokens 0: each must be within 0..1000000000", uv(uv(uv(uv(uv(head(1, 0, 0), 1), 0), 1_000_000_001), 0), 0)},
		{"more replicas than bytes", "4000 replicas in", uv(head(1, 0, 0), 4000)},
		{"tenant twice", `tenant "t" listed twice`, compactOf("r1", 1, 9, nil, 0, nil, []Tenant{{Name: "t"}, {Name: "t"}})},
	} {
		_, err := decodeCompact(tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestTableCompactDirectory: a peer's names are sent once; later messages
// index them, extend them, or restate them, and a message that extends a
// directory the table lacks is errDirectory, changing nothing.
func TestTableCompactDirectory(t *testing.T) {
	t.Parallel()
	tab, tr, _ := newTestTable(t)
	put := func(seq, gen uint64, names []string, from int, reps ...compactReplica) error {
		m, err := decodeCompact(compactOf("r1", seq, gen, names, from, reps, nil))
		if err != nil {
			t.Fatal(err)
		}
		_, err = tab.putCompact(m, noIP)
		return err
	}
	names := []string{"a", "b"}
	if err := put(1, 5, names, 0, compactReplica{Index: 1, InFlight: 3}); err != nil {
		t.Fatal(err)
	}
	if got := tr.PeerLoad("b").InFlight; got != 3 {
		t.Fatalf("b: %d in flight; want 3", got)
	}
	// Indices alone, then one new name appended.
	names = append(names, "c")
	if err := put(2, 5, names, 2, compactReplica{Index: 0, InFlight: 1}, compactReplica{Index: 2, InFlight: 7}); err != nil {
		t.Fatal(err)
	}
	if a, b, c := tr.PeerLoad("a").InFlight, tr.PeerLoad("b").InFlight, tr.PeerLoad("c").InFlight; a != 1 || b != 0 || c != 7 {
		t.Fatalf("in flight a %d, b %d, c %d; want 1, 0, 7", a, b, c)
	}
	// Another generation, or a start past what is held: restate.
	for _, tc := range []struct {
		gen  uint64
		from int
	}{{6, 3}, {5, 4}} {
		if err := put(3, tc.gen, append(names, "x"), tc.from); err != errDirectory {
			t.Fatalf("gen %d from %d: err = %v; want errDirectory", tc.gen, tc.from, err)
		}
	}
	if c := tr.PeerLoad("c").InFlight; c != 7 {
		t.Fatalf("a refused message changed c to %d", c)
	}
	// An index past the directory, and a directory naming a replica twice.
	if err := put(3, 5, names, 3, compactReplica{Index: 3, InFlight: 1}); err == nil || !strings.Contains(err.Error(), "beyond the directory's 3 names") {
		t.Fatalf("index past the directory: err = %v", err)
	}
	if err := put(3, 5, names, 3, compactReplica{Index: 2}); err != nil {
		t.Fatal(err)
	}
	if err := put(4, 7, []string{"a", "a"}, 0); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a directory naming a twice: err = %v", err)
	}
	// A new generation drops the old names: the table holds what the
	// directory names, no more.
	if err := put(5, 8, []string{"d"}, 0, compactReplica{Index: 0, InFlight: 2}); err != nil {
		t.Fatal(err)
	}
	if got := len(tab.slots.ids); got != 1 || tr.PeerLoad("d").InFlight != 2 || tr.PeerLoad("c") != (load.Peer{}) {
		t.Fatalf("after a restatement: %d ids held, d %+v, c %+v; want only d", got, tr.PeerLoad("d"), tr.PeerLoad("c"))
	}
	// Expiry drops the rest.
	tab.mu.Lock()
	tab.dropLocked("r1")
	tab.mu.Unlock()
	if got := len(tab.slots.ids); got != 0 {
		t.Fatalf("%d ids held after the peer left; want 0", got)
	}
}

// FuzzDecodeCompact: any bytes decode to a message or an error, never a
// panic; what decodes encodes back to the same message, and a table that
// takes a run of them keeps its sum equal to what its peers reported.
func FuzzDecodeCompact(f *testing.F) {
	f.Add(compactOf("r1", 1, 9, []string{"a", "b"}, 0, []compactReplica{{Index: 1, InFlight: 1}}, []Tenant{{Name: "t", Requests: 1}}))
	f.Add(compactOf("r1", 2, 9, []string{"a", "b", "c"}, 2, []compactReplica{{Index: 0, InFlight: 4}, {Index: 2, PrefillTokens: 3}}, nil))
	f.Add(compactOf("r2", 1, 3, []string{"a", "a"}, 0, nil, nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeCompact(body)
		if err != nil {
			return
		}
		names := make([]string, m.DirFrom, m.DirFrom+len(m.Names))
		for _, n := range m.Names {
			names = append(names, string(n))
		}
		again, err := decodeCompact(compactOf(m.Router, m.Seq, m.DirGen, names, m.DirFrom, m.Replicas, m.Tenants))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(m) {
			t.Fatalf("re-encoded %+v as %+v (%v)", m, again, err)
		}
		tab, _, _ := newTestTable(t)
		first := compactOf(m.Router, 1, m.DirGen, []string{"x", "y"}, 0, []compactReplica{{Index: 1, InFlight: 5}}, nil)
		for _, b := range [][]byte{first, body} {
			if fm, err := decodeCompact(b); err == nil {
				_, _ = tab.putCompact(fm, noIP)
			}
		}
		var want load.Peer
		for _, r := range tab.peers {
			for _, v := range r.vals {
				want.InFlight += v.InFlight
				want.InFlightTokens += v.InFlightTokens
				want.PrefillTokens += v.PrefillTokens
			}
		}
		var got load.Peer
		for x, p := range tab.slots.sum {
			if tab.slots.refs[x] == 0 && p != (load.Peer{}) {
				t.Fatalf("free slot %d sums %+v", x, p)
			}
			got.InFlight += p.InFlight
			got.InFlightTokens += p.InFlightTokens
			got.PrefillTokens += p.PrefillTokens
		}
		if got != want {
			t.Fatalf("the table sums %+v; its peers reported %+v", got, want)
		}
	})
}

// TestTablePublishEvery: with SetPublishEvery, a message that follows
// another within the period reaches the sink at Flush, not before; one
// after a quiet period goes at once.
func TestTablePublishEvery(t *testing.T) {
	t.Parallel()
	tab, tr, now := newTestTable(t)
	tab.SetPublishEvery(20 * time.Millisecond)
	tab.Put(msg("r1", 1, Replica{ID: "a", InFlight: 1}))
	if got := tr.PeerLoad("a").InFlight; got != 1 {
		t.Fatalf("first message: a has %d in flight; want 1 at once", got)
	}
	tab.Put(msg("r1", 2, Replica{ID: "a", InFlight: 2}))
	if got := tr.PeerLoad("a").InFlight; got != 1 {
		t.Fatalf("second message within the period: a has %d in flight; want the first's 1 until Flush", got)
	}
	tab.Flush()
	if got := tr.PeerLoad("a").InFlight; got != 2 {
		t.Fatalf("after Flush: a has %d in flight; want 2", got)
	}
	*now = now.Add(time.Second)
	tab.Put(msg("r1", 3, Replica{ID: "a", InFlight: 3}))
	if got := tr.PeerLoad("a").InFlight; got != 3 {
		t.Fatalf("a message after a quiet second: a has %d in flight; want 3 at once", got)
	}
}
