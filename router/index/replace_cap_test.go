package index

import (
	"errors"
	"fmt"
	"testing"
)

// TestReplaceAtKeyCapCountsOnlyKeysLeftOut pins the rejected count of a
// Replace near MaxKeys: its new keys go in before the old ones leave, so
// the keys cut then are stored again once the old state is out, and only
// those that still do not fit count as rejected (and raise the alarm).
// Both ways Replace works are covered: fresh slots, and in place when the
// index holds MaxHolders holders.
func TestReplaceAtKeyCapCountsOnlyKeysLeftOut(t *testing.T) {
	cases := []struct {
		name           string
		full           bool // the others fill every slot: Replace works in place
		old, new       []uint64
		wantKeys       int    // keys held afterwards, the others' one included
		wantRejected   uint64 // keys of new that stayed out
		wantAlarms     int
		wantErrKeysCap bool
	}{
		{name: "fresh/fits alone", old: seq(1, 9), new: seq(11, 19), wantKeys: 10},
		{name: "fresh/too big alone", old: seq(1, 9), new: seq(11, 22), wantKeys: 10, wantRejected: 3, wantAlarms: 1, wantErrKeysCap: true},
		{name: "in place/fits alone", full: true, old: seq(1, 9), new: seq(11, 19), wantKeys: 10},
		{name: "in place/too big alone", full: true, old: seq(1, 9), new: seq(11, 22), wantKeys: 10, wantRejected: 3, wantAlarms: 1, wantErrKeysCap: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			alarms := 0
			ix := New(Options{MaxKeys: 10, OnOverflow: func(int, int) { alarms++ }})
			// One other holder, or enough to fill every slot, all on key 1000.
			others := 1
			if c.full {
				others = MaxHolders - 1
			}
			for i := range others {
				if err := ix.Update(fmt.Sprintf("other-%d", i), []Change{{Tier: GPU, Add: []uint64{1000}}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := ix.Replace("a", []Blocks{{Tier: GPU, Keys: c.old}}); err != nil {
				t.Fatal(err)
			}
			err := ix.Replace("a", []Blocks{{Tier: GPU, Keys: c.new}})
			if got := errors.Is(err, ErrKeyCap); got != c.wantErrKeysCap {
				t.Errorf("Replace: got %v; want ErrKeyCap %v", err, c.wantErrKeysCap)
			}
			st := ix.Stats()
			if st.Keys != c.wantKeys || st.Rejected != c.wantRejected {
				t.Errorf("Stats = %+v; want %d keys, %d rejected", st, c.wantKeys, c.wantRejected)
			}
			if alarms != c.wantAlarms {
				t.Errorf("%d overflow alarms; want %d", alarms, c.wantAlarms)
			}
			gpu, _ := ix.ReplicaBlocks("a")
			if want := len(c.new) - int(c.wantRejected); gpu != want {
				t.Errorf("a holds %d blocks; want %d", gpu, want)
			}
			if got := ix.LookupReplicas(c.new[:1], 1, []string{"a"}, nil); len(got) != 1 || got[0].Blocks != 1 {
				t.Errorf("LookupReplicas of a's first new key = %+v; want 1 block", got)
			}
		})
	}
}
