// Command mur-roost is the spawn referee daemon. All behaviour lives in
// internal/roost; this file only hands it the arguments and exits.
package main

import (
	"fmt"
	"os"

	"github.com/murmur-go/murmur/internal/version"
)

func main() {
	// Replaced by internal/roost.Main once the daemon lands.
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("mur-roost " + version.Version)
		return
	}
	fmt.Fprintln(os.Stderr, "mur-roost: not implemented yet")
	os.Exit(1)
}
