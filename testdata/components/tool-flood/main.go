//go:build wasip1

// Command tool-flood is a Go-kit test fixture for the bounds on what one tool
// call may hand the host: its input names the flood.
//
//	"chunks:N:SIZE"  emits N murmur:text/chunks chunks of SIZE bytes each
//	                 (one buffer, reused: the guest's own memory stays small)
//	"meta:N"         returns a result with N metadata pairs ("k", "v")
//	{"flood":"..."}  the same, for an agent's model, whose tool input is a JSON object
//	anything else    passed, summary "no flood"
package main

import (
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Tool(flood) }

func main() {}

func flood(in guest.ToolInput) guest.ToolResult {
	res := guest.ToolResult{Status: guest.StatusPassed, Summary: guest.Some("no flood")}
	if in.Data == nil {
		return res
	}
	data := *in.Data
	if p, ok := strings.CutPrefix(data, `{"flood":"`); ok && strings.HasSuffix(p, `"}`) {
		data = p[:len(p)-2]
	}
	parts := strings.Split(data, ":")
	switch {
	case len(parts) == 3 && parts[0] == "chunks":
		n, _ := strconv.Atoi(parts[1])
		size, _ := strconv.Atoi(parts[2])
		chunk := strings.Repeat("x", size)
		for i := 0; i < n; i++ {
			guest.EmitChunk(chunk)
		}
		res.Summary = guest.Some("emitted " + parts[1] + " chunks")
	case len(parts) == 2 && parts[0] == "meta":
		n, _ := strconv.Atoi(parts[1])
		pairs := make([]guest.Pair, n)
		for i := range pairs {
			pairs[i] = guest.Pair{Key: "k", Value: "v"}
		}
		res.Metadata = pairs
		res.Summary = guest.Some("returned " + parts[1] + " pairs")
	}
	return res
}
