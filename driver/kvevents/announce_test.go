package kvevents

import "testing"

// TestAnnounceIfUnknown: a replica the store knows nothing of is announced
// (a reset to every session, listed in snapshots); one it holds blocks for
// is left alone, where Announce would tell sessions it holds nothing.
func TestAnnounceIfUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		blocks     int // blocks stored for the replica first
		wantResets int
		want       bool
	}{
		{"unknown", 0, 1, true},
		{"holding blocks", 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewStore()
			if tc.blocks > 0 {
				apply(s, "r", 0, stored([]uint64{1, 2}, nil, toks(0, 32), 16))
			}
			sess := s.Open()
			defer sess.Close()
			sess.Drain() // the first drain is a snapshot
			if got := s.AnnounceIfUnknown("r"); got != tc.want {
				t.Errorf("AnnounceIfUnknown = %v; want %v", got, tc.want)
			}
			if _, _, resets := count(sess.Drain()); resets != tc.wantResets {
				t.Errorf("%d resets sent; want %d", resets, tc.wantResets)
			}
			if n := len(s.Blocks("r")); n != tc.blocks {
				t.Errorf("%d blocks held; want %d", n, tc.blocks)
			}
			later := s.Open()
			defer later.Close()
			if d := later.Drain(); len(d.Replicas) != 1 || d.Replicas[0].ID != "r" {
				t.Errorf("snapshot %+v; want replica r listed", d.Replicas)
			}
		})
	}
}
