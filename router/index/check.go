package index

import "sort"

// Oversize is a replica tier holding more blocks than its engine has room
// for: the index has missed removals (lost events, a bug), so its view of
// that replica can no longer be trusted.
type Oversize struct {
	Replica  string
	Tier     Tier
	Held     int // blocks the index holds for the replica on Tier
	Capacity int // blocks the replica advertises on Tier
}

// Oversized compares each replica's blocks per tier with the capacity its
// engines advertise (vLLM's num_gpu_blocks and num_cpu_blocks, summed over
// ranks) and returns those above capacity × (1 + slack), sorted. capacity
// returns ok false for replicas whose capacity is unknown; they are skipped.
// The router runs this periodically, alarms, and asks the replica's driver
// for a fresh snapshot: an index that only grows (memory climbing until
// the router is restarted) is a failure other KV-aware routers have
// shipped.
func (ix *Index) Oversized(capacity func(replica string) (gpu, cpu int, ok bool), slack float64) []Oversize {
	ix.wmu.Lock()
	held := map[string][2]int{}
	for replica, ranks := range ix.slots {
		c := held[replica]
		for _, s := range ranks {
			c[GPU] += ix.counts[s][GPU]
			c[CPU] += ix.counts[s][CPU]
		}
		held[replica] = c
	}
	ix.wmu.Unlock()

	var out []Oversize
	for replica, c := range held {
		gpu, cpu, ok := capacity(replica)
		if !ok {
			continue
		}
		for t, limit := range [2]int{gpu, cpu} {
			if float64(c[t]) > float64(limit)*(1+slack) {
				out = append(out, Oversize{Replica: replica, Tier: Tier(t), Held: c[t], Capacity: limit})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Replica != out[j].Replica {
			return out[i].Replica < out[j].Replica
		}
		return out[i].Tier < out[j].Tier
	})
	return out
}
