//go:build race

package harness

// raceEnabled: the test binary runs under the race detector, so the binary
// RaceBinary builds is built with it too.
const raceEnabled = true
