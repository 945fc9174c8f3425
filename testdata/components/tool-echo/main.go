//go:build wasip1

// Command tool-echo is a Go-kit test fixture for the murmur tool world: it echoes its
// input data into its result. A few inputs exercise the tool world's imports and its
// failure paths:
//
//	(no data)        passed, summary "no input"
//	"fail"           status failed
//	"panic"          the tool panics: the host sees a trap
//	"ask:PROMPT"     calls murmur:task/task#request-input(PROMPT), echoes the answer
//	"chunks:A,B,C"   calls murmur:text/chunks#emit-chunk for A, B and C (and a thinking chunk)
//	{"ask":"PROMPT"} the same as "ask:PROMPT", for an agent's model, whose tool input is a JSON object
//	anything else    passed, data echoed, summary "echoed N bytes"
//
// Metadata always carries ("tool", "tool-echo") and, when given, ("log-path", LOG-PATH).
package main

import (
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Tool(echo) }

func main() {}

func echo(in guest.ToolInput) guest.ToolResult {
	res := guest.ToolResult{Status: guest.StatusPassed, Metadata: []guest.Pair{{Key: "tool", Value: "tool-echo"}}}
	if in.LogPath != nil {
		res.Metadata = append(res.Metadata, guest.Pair{Key: "log-path", Value: *in.LogPath})
	}
	if in.Data == nil {
		res.Summary = guest.Some("no input")
		return res
	}
	data := *in.Data
	// {"ask":"PROMPT"} exactly (no JSON library: it would double the fixture).
	if p, ok := strings.CutPrefix(data, `{"ask":"`); ok && strings.HasSuffix(p, `"}`) && !strings.ContainsAny(p[:len(p)-2], `"\`) {
		data = "ask:" + p[:len(p)-2]
	}
	switch {
	case data == "fail":
		res.Status = guest.StatusFailed
		res.Summary = guest.Some("failure requested")
		return res
	case data == "panic":
		panic("tool-echo: panic requested")
	case strings.HasPrefix(data, "ask:"):
		data = guest.RequestInput(strings.TrimPrefix(data, "ask:"))
	case strings.HasPrefix(data, "chunks:"):
		guest.EmitThinkingChunk("thinking about " + data)
		for _, c := range strings.Split(strings.TrimPrefix(data, "chunks:"), ",") {
			guest.EmitChunk(c)
		}
	}
	res.Data = guest.Some(data)
	res.Summary = guest.Some(fmt.Sprintf("echoed %d bytes", len(data)))
	return res
}
