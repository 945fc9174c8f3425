// Command murmur-argv is a test helper for shell tools: it prints, as one
// JSON object, the arguments it was given, its environment, its working
// directory and how many bytes its stdin held.
package main

import (
	"encoding/json"
	"io"
	"os"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	wd, _ := os.Getwd()
	out := map[string]any{"args": os.Args[1:], "env": os.Environ(), "dir": wd, "stdin_bytes": len(in), "stdin_err": err != nil}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(3)
	}
}
