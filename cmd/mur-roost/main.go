// Command mur-roost is the spawn referee daemon. All behaviour lives in
// internal/roost; this file only hands it the arguments and exits.
package main

import (
	"os"

	"github.com/murmur-go/murmur/internal/roost"
)

func main() { os.Exit(roost.Main(os.Args[1:], os.Stdout, os.Stderr)) }
