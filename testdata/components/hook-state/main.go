//go:build wasip1

// Command hook-state is a Go-kit test fixture of the hook world that keeps state: at
// every event it is bound to it appends the event's name as one line to
// /state/events, its artifact's state store (the absolute path: a hook may have a
// store and no work folder), and answers none.
package main

import (
	"os"

	"github.com/murmur-go/murmur/guest"
)

func record(event string) (guest.HookOutput, error) {
	f, err := os.OpenFile("/state/events", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return guest.None(), err
	}
	defer f.Close()
	if _, err := f.WriteString(event + "\n"); err != nil {
		return guest.None(), err
	}
	return guest.None(), nil
}

func on[E any](event string) func(E) (guest.HookOutput, error) {
	return func(E) (guest.HookOutput, error) { return record(event) }
}

func init() {
	guest.Hook(guest.Hooks{
		OnSessionStart: on[guest.SessionContext]("on-session-start"),
		OnTaskStart:    on[guest.TaskStartEvent]("on-task-start"),
		OnTaskEnd:      on[guest.TaskEndEvent]("on-task-end"),
		OnSessionEnd:   on[guest.SessionEndEvent]("on-session-end"),
	})
}

func main() {}
