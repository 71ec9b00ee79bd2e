package ingest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func keys(from, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(from + i)
	}
	return out
}

// TestRefusedRetry: a refused replica's driver is asked for a snapshot
// once its backoff has passed and its index has room, once per refusal;
// a refusal that no longer stands (the replica left) asks nothing.
func TestRefusedRetry(t *testing.T) {
	f := newPendingFixture(Options{})
	for _, id := range []string{"a/1", "b/1", "c/1", "d/1"} {
		f.known[id] = "m"
	}
	f.ms.For("m").SetMaxKeys(32) // room while fewer than 30 keys
	f.send("da", true, rep("a/1", keys(0, 20)))
	for _, d := range []string{"db", "dc", "dd"} {
		f.send(d, true, rep(d[1:]+"/1", keys(100*len(d)+int(d[1]), 20)))
	}
	keepAlive := func() []string {
		f.send("da", false)
		return f.s.TakeResyncs()
	}
	steps := []struct {
		name string
		do   func()
		want []string // drivers asked
	}{
		{"within the backoff", func() { f.now = f.now.Add(999 * time.Millisecond) }, nil},
		{"backoff passed", func() { f.now = f.now.Add(time.Millisecond) }, []string{"db", "dc", "dd"}},
		{"asked once", func() { f.now = f.now.Add(time.Hour) }, nil},
		{"refused again: twice the backoff", func() {
			f.send("db", true, rep("b/1", keys(500, 20)))
			f.now = f.now.Add(time.Second)
		}, nil},
		{"second backoff passed", func() { f.now = f.now.Add(time.Second) }, []string{"db"}},
		{"no room", func() {
			f.send("dc", true, rep("c/1", keys(600, 20)))
			f.send("da", false, rep("a/1", keys(20, 10))) // 30 keys: no room
			f.now = f.now.Add(time.Minute)
		}, nil},
		{"a refused replica that left", func() {
			f.send("dd", true, rep("d/1", keys(700, 20)))
			f.s.Drop("d/1")
			f.now = f.now.Add(time.Minute)
		}, nil},
		{"room again", func() { f.send("da", false, rep("a/1", nil, keys(20, 10)...)) }, []string{"dc"}},
	}
	for _, st := range steps {
		st.do()
		if got := keepAlive(); !cmp.Equal(got, st.want) {
			t.Errorf("%s: asked %v; want %v", st.name, got, st.want)
		}
	}
}

// TestRefusedQueuesBounded: a replica refused again and again while its
// index stays full leaves the retry queues no longer than a few entries,
// also behind another refused replica that stays first in line.
func TestRefusedQueuesBounded(t *testing.T) {
	f := newPendingFixture(Options{})
	f.known["a/1"], f.known["b/1"], f.known["c/1"] = "m", "m", "m"
	f.ms.For("m").SetMaxKeys(32)
	f.send("da", true, rep("a/1", keys(0, 31))) // no room left
	f.send("db", true, rep("b/1", keys(100, 40)))
	for i := range 200 {
		f.send("dc", true, rep("c/1", keys(1000+i*50, 40)))
		f.now = f.now.Add(maxRefusedBackoff)
		f.send("da", false)
		if got := f.s.TakeResyncs(); len(got) != 0 {
			t.Fatalf("round %d: asked %v with no room", i, got)
		}
	}
	n := f.s.refusedWait.Len()
	for _, q := range f.s.refusedDue {
		n += q.Len()
	}
	if limit := 2 * (2*len(f.s.refused) + 16); n > limit {
		t.Errorf("%d queued refusals for %d refused replicas; want at most %d", n, len(f.s.refused), limit)
	}
	for _, id := range []string{"b/1", "c/1"} {
		if why, ok := f.s.Refused(id); !ok || why == "" {
			t.Errorf("%s not refused", id)
		}
	}
}
