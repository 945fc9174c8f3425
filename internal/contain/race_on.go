//go:build race

package contain

// raceEnabled: this binary is built with the race detector, whose shadow
// memory cannot live under RLIMIT_AS (see runInit).
const raceEnabled = true
