package report

// saturated reports whether p saturated under the SLO: it shed a request
// or its TTFT p99 exceeds the SLO's TTFT, the rule the knee applies to
// the baseline.
func (s *Sweep) saturated(p Summary) bool {
	return p.Shed > 0 || float64(p.TTFT.P99) > float64(ms(s.SLO.TTFT))
}

// PeersKnee is the index in Rates of the lowest rate at which every peer
// policy run there saturated, by the rule the knee applies to the
// baseline: the rate past which no peer still serves within the SLO, and
// where a better default can pull ahead in goodput (at the baseline's
// knee the cache-aware policies are often all still unsaturated). It is
// -1 when some peer never saturates or no peer ran.
func (s *Sweep) PeersKnee() int {
	for i := range s.Rates {
		ran, all := false, true
		for _, p := range s.Rates[i].Policies {
			if s.peer(p.Policy) {
				ran = true
				all = all && s.saturated(p)
			}
		}
		if ran && all {
			return i
		}
	}
	return -1
}
