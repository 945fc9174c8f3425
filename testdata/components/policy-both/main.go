//go:build wasip1

// Command policy-both is a Go-kit test fixture that exports both the lifecycle
// (murmur:hook/lifecycle@0.5.0) and the gate (murmur:policy/gate@0.1.0): at
// on-task-start it answers the artifact "started <task>", and it denies a call
// whose input holds "policy:deny", saying how many tasks it has seen start (the
// one instance serves both exports).
package main

import (
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

var started int

func init() {
	guest.Hook(guest.Hooks{OnTaskStart: func(e guest.TaskStartEvent) (guest.HookOutput, error) {
		started++
		return guest.Artifact("started " + e.TaskID), nil
	}})
	guest.Gate(func(r guest.CallRequest) (guest.Decision, error) {
		if strings.Contains(r.Input, "policy:deny") {
			return guest.Deny("denied after " + strconv.Itoa(started) + " task starts"), nil
		}
		return guest.Allow(), nil
	})
}

func main() {}
