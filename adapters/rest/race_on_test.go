//go:build race

package rest

// raceEnabled: the race detector allocates on its own and empties
// sync.Pools at random, so allocation counts mean nothing under it.
const raceEnabled = true
