//go:build !race

package replicas

const raceEnabled = false
