// Command roost-load measures mur-roost over loopback (internal/roost/load).
package main

import (
	"os"

	"github.com/murmur-go/murmur/internal/roost/load"
)

func main() { os.Exit(load.Main(os.Args[1:], os.Stdout, os.Stderr)) }
