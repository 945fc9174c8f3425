// Command mur is Murmur's CLI and capsule runtime. All behaviour lives in
// internal/cli; this file only hands it the arguments and exits.
package main

import (
	"os"

	"github.com/murmur-go/murmur/internal/cli"
	"github.com/murmur-go/murmur/internal/contain"
)

func main() {
	// A contained command starts as this binary re-executed with the
	// containment helper's argument: it sets the tier up and execs the
	// command, and never returns here.
	contain.MaybeInit()
	pauseStartupGC(os.Args[1:])
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
