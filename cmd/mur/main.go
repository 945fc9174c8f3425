// Command mur is Murmur's CLI and capsule runtime. All behaviour lives in
// internal/cli; this file only hands it the arguments and exits.
package main

import (
	"os"

	"github.com/murmur-go/murmur/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
