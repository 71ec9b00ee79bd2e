package peers

import "github.com/llmgw/llmgw/router/load"

// slots numbers the replica ids the table's peers report, so that a
// report is two arrays (slots and loads) and the sum over peers is one:
// taking a message costs an array update per replica, with no map or
// string work, however many peers and replicas there are. A slot is held
// by references (an entry of a compact peer's directory, or of a JSON
// peer's report) and reused once none is left, so the ids held stay
// bounded by what the peers hold.
type slots struct {
	ids   map[string]int32
	names []string
	refs  []int32
	free  []int32
	sum   []load.Peer
	mark  []uint32 // per slot: the stamp of the last directory checked
	stamp uint32
}

func newSlots() *slots { return &slots{ids: map[string]int32{}} }

// ref returns id's slot, taking a reference to it.
func (s *slots) ref(id string) int32 {
	if x, ok := s.ids[id]; ok {
		s.refs[x]++
		return x
	}
	return s.alloc(id)
}

// refBytes is ref for an id still in a message's bytes: the id is copied
// only when it is new to the table.
func (s *slots) refBytes(id []byte) int32 {
	if x, ok := s.ids[string(id)]; ok {
		s.refs[x]++
		return x
	}
	return s.alloc(string(id))
}

func (s *slots) alloc(id string) int32 {
	var x int32
	if n := len(s.free); n > 0 {
		x, s.free = s.free[n-1], s.free[:n-1]
		s.names[x] = id
	} else {
		x = int32(len(s.names))
		s.names = append(s.names, id)
		s.refs = append(s.refs, 0)
		s.sum = append(s.sum, load.Peer{})
		s.mark = append(s.mark, 0)
	}
	s.ids[id] = x
	s.refs[x] = 1
	return x
}

// unref drops one reference to each of xs; a slot with none left is
// free (its sum is zero by then: only references add to it).
func (s *slots) unref(xs []int32) {
	for _, x := range xs {
		if s.refs[x]--; s.refs[x] == 0 {
			delete(s.ids, s.names[x])
			s.names[x] = ""
			s.sum[x] = load.Peer{}
			s.free = append(s.free, x)
		}
	}
}

// add adds a report's loads to the sum (sign 1) or takes them out (-1).
func (s *slots) add(xs []int32, vals []load.Peer, sign int) {
	for i, x := range xs {
		p, v := &s.sum[x], vals[i]
		p.InFlight += sign * v.InFlight
		p.InFlightTokens += sign * v.InFlightTokens
		p.PrefillTokens += sign * v.PrefillTokens
	}
}

// distinct reports whether xs names no slot twice.
func (s *slots) distinct(xs []int32) bool {
	s.stamp++
	if s.stamp == 0 { // wrapped: clear the old marks
		clear(s.mark)
		s.stamp = 1
	}
	for _, x := range xs {
		if s.mark[x] == s.stamp {
			return false
		}
		s.mark[x] = s.stamp
	}
	return true
}

// loads is the sum per replica id, leaving out the zeros.
func (s *slots) loads() map[string]load.Peer {
	out := make(map[string]load.Peer, len(s.ids))
	for x, p := range s.sum {
		if p != (load.Peer{}) {
			out[s.names[x]] = p
		}
	}
	return out
}
