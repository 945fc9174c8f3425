// Command mur-contain is mur's containment helper, installed beside mur:
// the re-exec init helper of internal/contain in a binary that links only
// what the helper needs, so that a contained command does not pay for
// starting the whole of mur (its package initialisation and its size).
// mur starts it; run by hand it only says what it is.
package main

import (
	"fmt"
	"os"

	"github.com/murmur-go/murmur/internal/contain"
)

func main() {
	contain.MaybeInit()
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("mur-contain " + contain.HelperStamp())
		return
	}
	fmt.Fprintln(os.Stderr, "mur-contain is mur's containment helper: mur starts it for each contained command")
	os.Exit(2)
}
