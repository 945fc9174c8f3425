//go:build !race

package contain

const raceEnabled = false
