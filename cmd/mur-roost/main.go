// Command mur-roost is the spawn referee daemon. All behaviour lives in
// internal/roost; this file only hands it the arguments and exits.
package main

import (
	"os"

	"github.com/murmur-go/murmur/internal/roost"
)

// atExit runs before the process exits; a profiling build (profile.go, tag
// roostpprof) sets it to write its profiles. The daemon itself never does.
var atExit = func() {}

func main() {
	code := roost.Main(os.Args[1:], os.Stdout, os.Stderr)
	atExit()
	os.Exit(code)
}
