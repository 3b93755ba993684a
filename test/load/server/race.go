//go:build race

package server

// raceEnabled: the test binary runs under the race detector, so the server it
// drives is built with it too.
const raceEnabled = true
