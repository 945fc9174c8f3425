//go:build wasip1

// Command policy-probe is a Go-kit test fixture for the policy world: a policy hook
// whose answer is chosen by a marker in the call's input (the whole compact JSON,
// or a shell call's argv) or, failing that, by its environment's POLICY_PROBE, so
// one component covers every path of the gate:
//
//	"policy:deny"    deny, with the reason "probe denies <tool>"
//	"policy:blank"   deny with a blank reason
//	"policy:fail"    err("probe failed on purpose")
//	"policy:trap"    panic: the host sees a trap
//	"policy:hang"    loop until the runtime stops it at its deadline
//	"policy:hog"     allocate until the memory limit stops it
//	"policy:ask"     one run-inference, then allow
//	anything else    allow
//
// An allowed call does nothing else (the gate's benchmark uses it as a no-op hook).
package main

import (
	"errors"
	"os"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

var sink [][]byte

func init() {
	guest.Gate(func(r guest.CallRequest) (guest.Decision, error) {
		text := r.Input + " " + strings.Join(r.Argv, " ")
		mode := os.Getenv("POLICY_PROBE")
		if i := strings.Index(text, "policy:"); i >= 0 {
			mode = text[i+len("policy:"):]
			if j := strings.IndexAny(mode, " \"\\,}]'"); j >= 0 {
				mode = mode[:j]
			}
		}
		switch mode {
		case "deny":
			return guest.Deny("probe denies " + r.ToolName), nil
		case "blank":
			return guest.Deny("  "), nil
		case "fail":
			return guest.Allow(), errors.New("probe failed on purpose")
		case "trap":
			panic("probe trapped on purpose")
		case "hang":
			for n := 0; ; n++ {
				if n < 0 {
					break
				}
			}
		case "hog":
			for {
				sink = append(sink, make([]byte, 1<<20))
			}
		case "ask":
			if _, err := guest.RunInference(guest.InferenceRequest{Messages: []guest.HookMessage{{Role: "user", Content: "may " + r.ToolName + " run?"}}}); err != nil {
				return guest.Allow(), err
			}
		}
		return guest.Allow(), nil
	})
}

func main() {}
