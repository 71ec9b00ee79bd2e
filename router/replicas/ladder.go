package replicas

import "math/rand/v2"

// appendHolders sets sc.picked to the positions in tp (of n candidates),
// marked in sc.seen, of the prompt's holders that a narrowed list takes, at most
// Options.HolderCap of them, chosen so that no replica with a longer
// match than every candidate's is left out:
//
//   - When block 0 has at most HolderCap holders, all of them: every
//     replica with any match (a match is a prefix, so it holds block 0).
//   - Otherwise the shallowest block b whose holders fit under the cap,
//     found by binary search (a block's holders hold the blocks before
//     it, so the counts fall with depth; one HolderCount probe per step,
//     log2 of the prompt's blocks): its holders are every replica that
//     matches more than b blocks. A prefix every replica holds (a
//     fleet-wide system prompt) thus costs the cap, not the fleet.
//   - When no block fits but is held, the holders of the deepest held
//     block all match equally far: a uniform sample of HolderCap of them,
//     not the first by name or slot.
func (s *Set) appendHolders(sc *narrowed, model string, keys []uint64, tp *template, n int) {
	sc.picked = sc.picked[:0]
	sc.seen = resizeWords(sc.seen, (n+63)/64)
	hx, limit := s.opts.Holders, s.opts.HolderCap
	at := 0
	if c := hx.HolderCount(model, keys[0]); c == 0 {
		return
	} else if c > limit {
		// Blocks below lo have more holders than the cap; up has at most
		// the cap (len(keys): none).
		lo, up, upHeld := 1, len(keys), 0
		for lo < up {
			mid := int(uint(lo+up) >> 1)
			if c := hx.HolderCount(model, keys[mid]); c > limit {
				lo = mid + 1
			} else {
				up, upHeld = mid, c
			}
		}
		at = up
		if upHeld == 0 {
			at = up - 1 // the deepest held block, too widely held
		}
	}
	pos := tp.positions()
	sc.holders = hx.AppendHolders(model, keys[at], sc.holders[:0])
	if len(sc.holders) > limit {
		// A partial Fisher-Yates shuffle: each holder is taken with the
		// same chance, whatever its name or slot.
		for k := range limit {
			j := k + rand.IntN(len(sc.holders)-k)
			sc.holders[k], sc.holders[j] = sc.holders[j], sc.holders[k]
			sc.pick(pos, sc.holders[k])
		}
		return
	}
	for _, h := range sc.holders {
		sc.pick(pos, h)
	}
}

// pick appends replica's position to sc.picked unless it is not a
// candidate or already picked.
func (sc *narrowed) pick(pos map[string]int, replica string) {
	i, ok := pos[replica]
	if !ok || sc.seen[i>>6]&(1<<(i&63)) != 0 {
		return
	}
	sc.seen[i>>6] |= 1 << (i & 63)
	sc.picked = append(sc.picked, i)
}
