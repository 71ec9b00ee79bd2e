//go:build race

package server

// raceEnabled: the race detector multiplies memory and time, so the scale
// test posts fewer blocks and does not hold RSS to the per-block bound.
const raceEnabled = true
