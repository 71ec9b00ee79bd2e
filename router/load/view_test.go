package load

import "testing"

// TestViewFollowsTracker: a View reads what Load reads for each name, as
// entries are made, reported by peers and forgotten, and reading it
// allocates nothing.
func TestViewFollowsTracker(t *testing.T) {
	tr := NewTracker()
	ids := []string{"a", "b", "c"}
	v := NewView(len(ids), func(i int) string { return ids[i] })
	var ends []func()
	steps := []struct {
		name string
		do   func()
	}{
		{"none known", func() {}},
		{"a begins", func() { ends = append(ends, tr.Begin("a", 10)) }},
		{"b scraped", func() { tr.SetScraped("b", 1, 2, 0.25) }},
		{"peers on b and c", func() { tr.SetPeerLoads(map[string]Peer{"b": {InFlight: 3}, "c": {InFlight: 1, PrefillTokens: 5}}) }},
		{"a forgotten", func() { tr.Forget("a") }},
		{"a begins again", func() { ends = append(ends, tr.Begin("a", 7)) }},
		{"c begins", func() { ends = append(ends, tr.Begin("c", 4)) }},
		{"requests end", func() {
			for _, end := range ends {
				end()
			}
		}},
		{"peers gone", func() { tr.SetPeerLoads(nil) }},
	}
	for _, st := range steps {
		st.do()
		for round := range 2 { // the second reads what the first found
			for i, id := range ids {
				var got Load
				tr.Read(func(l Locked) { got = l.LoadOf(v, i) })
				if want := tr.Load(id); got != want {
					t.Errorf("%s, read %d: %s's view load %+v; want %+v", st.name, round, id, got, want)
				}
			}
		}
	}
	read := func() {
		tr.Read(func(l Locked) {
			for i := range ids {
				_ = l.LoadOf(v, i)
			}
		})
	}
	if n := testing.AllocsPerRun(50, read); n != 0 {
		t.Errorf("reading a view allocates %v times; want 0", n)
	}
}
