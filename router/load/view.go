package load

// View is a fixed list of replicas whose loads a caller reads on request
// after request (a model's candidates): it finds each replica's entry by
// name once, on its first read, and later reads follow the pointer, where
// Locked.Load looks the name up in a map (about 270 ns per replica in a
// fleet of 4,096, whose entries miss the caches). What it found stays
// valid until the tracker makes or forgets an entry (rare once every
// replica has been scraped); the view then finds its entries again. A View is read only inside one Tracker's Read, whose lock guards
// it.
type View struct {
	id   func(i int) string
	t    *Tracker
	gen  uint64
	refs []*tracked
}

// NewView returns a view of n replicas, the i-th named id(i).
func NewView(n int, id func(i int) string) *View {
	return &View{id: id, refs: make([]*tracked, n)}
}

// LoadOf is the load of v's i-th replica, as Load returns it for its name.
func (l Locked) LoadOf(v *View, i int) Load {
	t := l.t
	if v.t != t || v.gen != t.gen {
		clear(v.refs)
		v.t, v.gen = t, t.gen
	}
	e := v.refs[i]
	if e == nil {
		if e = t.load[v.id(i)]; e == nil {
			e = absent
		}
		v.refs[i] = e
	}
	if e == absent {
		if len(t.peers) == 0 {
			return Load{}
		}
		return t.loadLocked(v.id(i), l.now)
	}
	return t.loadOf(e, l.now)
}

// absent marks, in a View, a replica the tracker had no entry for (it
// reads only what peers report of it, as Load does).
var absent = new(tracked)
