//go:build wasip1

// Command echo-tool is the example tool artifact: a murmur:tool/run component written
// in Go with the guest kit. hello-script invokes it.
package main

import (
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

// A reactor component never runs main: register the tool from init.
func init() { guest.Tool(run) }

func main() {}

func run(in guest.ToolInput) guest.ToolResult {
	if in.Data == nil {
		return guest.ToolResult{Status: guest.StatusFailed, Summary: guest.Some("echo-tool: no input data")}
	}
	out := strings.ToUpper(*in.Data)
	return guest.ToolResult{
		Status:   guest.StatusPassed,
		Summary:  guest.Some(fmt.Sprintf("echo-tool read %d bytes", len(*in.Data))),
		Data:     guest.Some(out),
		Metadata: []guest.Pair{{Key: "tool", Value: "echo-tool"}},
	}
}
