//go:build race

package index

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts mean nothing under it.
const raceEnabled = true
