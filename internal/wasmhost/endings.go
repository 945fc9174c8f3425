package wasmhost

import (
	"errors"
	"fmt"
)

// A call (or an instantiation) that does not return normally ends with one of
// the error types below; the script-capsule runtime maps them onto the spec's
// endings: *TrapError -> trapped, *DeadlineError -> deadline_exceeded (plus a
// call_deadline trace line when Waiting), *ResourceLimitError ->
// resource_limit. Any other error (a link failure, a closed instance, an
// invalid argument) is a host-side failure.

// TrapError reports that the guest trapped (unreachable, out-of-bounds, a failed host
// import, a capability it was not granted, ...). Message is wasmtime's text
// for the trap or the host import's error; Err is the Go error a host
// function returned, when that is what stopped the guest.
type TrapError struct {
	Message string
	Err     error
}

func (e *TrapError) Error() string { return "trapped: " + e.Message }
func (e *TrapError) Unwrap() error { return e.Err }

// DeadlineError reports that the call ran past its deadline. Waiting is true when the
// guest was waiting on the runtime (a WASI clock wait, a Go host function)
// as the deadline passed; Call then names what it was waiting on, as
// "<package>:<ns>/<interface>#<function>" without version, e.g.
// "wasi:clocks/monotonic-clock#subscribe-duration" or
// "murmur:task/task#request-input".
type DeadlineError struct {
	Waiting bool
	Call    string
}

func (e *DeadlineError) Error() string {
	if e.Waiting {
		if e.Call != "" {
			return "deadline exceeded while waiting on " + e.Call
		}
		return "deadline exceeded while waiting on the runtime"
	}
	return "deadline exceeded"
}

// ResourceLimitError reports that the guest tried to go past a resource limit. Which is
// "memory", "table" or "instances".
type ResourceLimitError struct {
	Which  string
	Detail string
}

func (e *ResourceLimitError) Error() string {
	s := "resource limit reached: " + e.Which
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// ExitError reports that the guest called wasi:cli/exit. Code 0 is a normal exit the
// caller may treat as success.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("guest exited with status %d", e.Code) }

// CancelledError reports that the caller's context ended during the call.
type CancelledError struct{ Err error }

func (e *CancelledError) Error() string { return "call cancelled: " + e.Err.Error() }
func (e *CancelledError) Unwrap() error { return e.Err }

// CapabilityError is what a guest's call of an import the host did not grant
// fails with (wrapped in a *TrapError). Name is "<interface>#<function>" as
// the component imports it.
type CapabilityError struct{ Name string }

func (e *CapabilityError) Error() string { return "capability not granted: " + e.Name }

// ErrInstanceDead is returned by calls on an instance whose earlier call did
// not return normally: wasmtime poisons a component instance after a trap,
// so the runtime uses a fresh instance per run.
var ErrInstanceDead = errors.New("wasmhost: instance stopped by an earlier ending; create a new one")

// ErrClosed is returned by operations on a closed engine, component or instance.
var ErrClosed = errors.New("wasmhost: closed")
