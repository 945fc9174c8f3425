package cli

import (
	"bytes"
	"io"
)

// CobraOutput runs args through the command tree itself (Main answers
// --version before building it) and returns what it printed on stdout.
func CobraOutput(args ...string) (string, error) {
	var out bytes.Buffer
	root := newRoot(&out, io.Discard)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// GuestKitGoVersion is the go line mur init writes into a component's go.mod.
const GuestKitGoVersion = guestKitGoVersion
