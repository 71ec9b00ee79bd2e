package kvevents

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// mirrorBlocks returns what a receiver applying every drain would hold.
func mirrorBlocks(m *kvwire.Mirror, replica string) []Block {
	var out []Block
	for _, b := range m.Blocks("d", replica) {
		out = append(out, Block{Rank: b.Rank, Tier: b.Tier, Key: blockkey.Key(b.Key), Group: b.Group})
	}
	return sortBlocks(out)
}

func feed(m *kvwire.Mirror, d Drained) {
	m.ApplyUpdate(&kvwire.Update{Driver: "d", Snapshot: d.Snapshot, Replicas: d.Replicas})
}

// count sums the adds and dels of a drain.
func count(d Drained) (adds, dels, resets int) {
	for _, r := range d.Replicas {
		if r.Reset {
			resets++
		}
		for _, g := range r.Groups {
			adds += len(g.Add)
			dels += len(g.Del)
		}
	}
	return
}

func TestSessionSnapshotThenDeltas(t *testing.T) {
	t.Parallel()
	s := NewStore()
	tk := toks(0, 16)
	apply(s, "a", 0, stored([]uint64{1, 2}, nil, tk[:8], 4))
	ss := s.Open()
	defer ss.Close()

	d := ss.Drain()
	if !d.Snapshot || len(d.Replicas) != 1 || d.Replicas[0].ID != "a" || d.Replicas[0].BlockSize != 4 {
		t.Fatalf("first drain %+v; want a snapshot of replica a", d)
	}
	if adds, _, _ := count(d); adds != 2 {
		t.Errorf("snapshot adds %d; want 2", adds)
	}
	if d := ss.Drain(); !d.Empty() {
		t.Errorf("drain without changes: %+v; want empty", d)
	}
	apply(s, "a", 0, stored([]uint64{3}, u64(2), tk[8:12], 4), removed(MediumGPU, 1))
	d = ss.Drain()
	if d.Snapshot {
		t.Fatal("second drain is a snapshot")
	}
	if adds, dels, _ := count(d); adds != 1 || dels != 1 {
		t.Errorf("delta adds %d dels %d; want 1 and 1", adds, dels)
	}
}

func TestSessionNetEffect(t *testing.T) {
	t.Parallel()
	tk := toks(0, 8)
	tests := []struct {
		name              string
		before, during    []Event
		adds, dels, reset int
	}{
		{"stored then evicted is never sent", nil,
			[]Event{stored([]uint64{1}, nil, tk[:4], 4), removed(MediumGPU, 1)}, 0, 0, 0},
		{"evicted then stored again is no change", []Event{stored([]uint64{1}, nil, tk[:4], 4)},
			[]Event{removed(MediumGPU, 1), stored([]uint64{1}, nil, tk[:4], 4)}, 0, 0, 0},
		{"stored, evicted, stored is one add", nil,
			[]Event{stored([]uint64{1}, nil, tk[:4], 4), removed(MediumGPU, 1), stored([]uint64{1}, nil, tk[:4], 4)}, 1, 0, 0},
		{"cleared is a del per block", []Event{stored([]uint64{1, 2}, nil, tk, 4)},
			[]Event{{Type: AllBlocksCleared}}, 0, 2, 0},
		{"duplicate store is one add", nil,
			[]Event{stored([]uint64{1}, nil, tk[:4], 4), stored([]uint64{1}, nil, tk[:4], 4), removed(MediumGPU, 1)}, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewStore()
			apply(s, "a", 0, tt.before...)
			ss := s.Open()
			defer ss.Close()
			ss.Drain()
			apply(s, "a", 0, tt.during...)
			adds, dels, resets := count(ss.Drain())
			if adds != tt.adds || dels != tt.dels || resets != tt.reset {
				t.Errorf("adds %d dels %d resets %d; want %d %d %d", adds, dels, resets, tt.adds, tt.dels, tt.reset)
			}
		})
	}
}

func TestRemoveReachesEverySession(t *testing.T) {
	t.Parallel()
	s := NewStore()
	apply(s, "a", 0, stored([]uint64{1}, nil, toks(0, 4), 4))
	apply(s, "b", 0, stored([]uint64{1}, nil, toks(0, 4), 4))
	sessions := []*Session{s.Open(), s.Open(), s.Open()}
	mirrors := make([]*kvwire.Mirror, len(sessions))
	for i, ss := range sessions {
		mirrors[i] = kvwire.NewMirror()
		feed(mirrors[i], ss.Drain())
	}
	s.Remove("a")
	for i, ss := range sessions {
		d := ss.Drain()
		if len(d.Replicas) != 1 || d.Replicas[0].ID != "a" || !d.Replicas[0].Reset || len(d.Replicas[0].Groups) != 0 {
			t.Errorf("session %d got %+v; want replica a reset and empty", i, d)
		}
		feed(mirrors[i], d)
		if got := mirrors[i].Replicas("d"); !slices.Equal(got, []string{"b"}) {
			t.Errorf("session %d mirror replicas %v; want [b]", i, got)
		}
		ss.Close()
	}
}

func TestRemoveThenRestartInOneWindow(t *testing.T) {
	t.Parallel()
	s := NewStore()
	tk := toks(0, 8)
	apply(s, "a", 0, stored([]uint64{1}, nil, tk[:4], 4))
	ss := s.Open()
	defer ss.Close()
	m := kvwire.NewMirror()
	feed(m, ss.Drain())
	s.Remove("a")
	apply(s, "a", 0, stored([]uint64{7}, nil, tk[4:], 4))
	d := ss.Drain()
	feed(m, d)
	if len(d.Replicas) != 1 || !d.Replicas[0].Reset {
		t.Fatalf("drain %+v; want one reset replica", d)
	}
	if got, want := mirrorBlocks(m, "a"), s.Blocks("a"); !slices.Equal(got, want) {
		t.Errorf("mirror %v; want %v", got, want)
	}
}

// TestStalledSession leaves one session undrained while another keeps up:
// intake never waits, the log stays bounded, and the stalled session's next
// drain is a snapshot that matches the state.
func TestStalledSession(t *testing.T) {
	t.Parallel()
	const maxLag = 3 * chunkSize
	s := NewStore(WithMaxLag(maxLag))
	live, stalled := s.Open(), s.Open()
	defer live.Close()
	defer stalled.Close()
	live.Drain()
	stalled.Drain()
	m := kvwire.NewMirror()
	for i := range uint64(10 * maxLag) {
		tk := toks(int(i), 4)
		apply(s, "a", 0, stored([]uint64{i}, nil, tk, 4), removed(MediumGPU, i))
		apply(s, "a", 0, stored([]uint64{i}, nil, tk, 4))
		if i%1000 == 0 {
			feed(m, live.Drain())
		}
		s.mu.Lock()
		held := s.log.end() - s.log.base
		s.mu.Unlock()
		if held > 2*maxLag {
			t.Fatalf("log holds %d changes after %d batches; want at most %d", held, i, 2*maxLag)
		}
	}
	feed(m, live.Drain())
	if got, want := mirrorBlocks(m, "a"), s.Blocks("a"); !slices.Equal(got, want) {
		t.Errorf("live session mirror %v; want %v", got, want)
	}
	if d := stalled.Drain(); !d.Snapshot {
		t.Errorf("stalled session's drain is not a snapshot")
	}
}

// TestSessionMirrorsRandomHistory applies a random history of stores,
// removes, clears, rank clears and removals across replicas, ranks and tiers,
// draining at random points, and checks that a receiver applying the drains
// ends up with exactly the store's state.
func TestSessionMirrorsRandomHistory(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := NewStore(WithMaxLag(chunkSize))
		ss := s.Open()
		m := kvwire.NewMirror()
		replicas := []string{"a", "b", "c"}
		for range 3000 {
			rep := replicas[rng.IntN(len(replicas))]
			rank := rng.IntN(2)
			h := uint64(rng.IntN(40))
			switch x := rng.IntN(100); {
			case x < 45:
				var parent *uint64
				if h%4 != 0 {
					parent = u64(h - 1)
				}
				apply(s, rep, rank, stored([]uint64{h}, parent, toks(int(h), 4), 4))
			case x < 55:
				apply(s, rep, rank, Event{Type: BlockStored, Hashes: []uint64{h}, BlockSize: 4, Medium: MediumCPU})
			case x < 85:
				apply(s, rep, rank, removed(Medium(rng.IntN(2)), h))
			case x < 88:
				apply(s, rep, rank, Event{Type: AllBlocksCleared})
			case x < 90:
				s.ClearRank(rep, rank)
			case x < 92:
				s.Remove(rep)
			case x < 93:
				ss.Resync()
			default:
				feed(m, ss.Drain())
			}
		}
		feed(m, ss.Drain())
		for _, rep := range replicas {
			if got, want := mirrorBlocks(m, rep), s.Blocks(rep); !slices.Equal(got, want) {
				t.Fatalf("seed %d replica %s: mirror %v; want %v", seed, rep, got, want)
			}
		}
		ss.Close()
	}
}
