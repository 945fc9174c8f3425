package grant

import (
	"errors"

	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// Ending is how one component call ended, in the trace's words
// (session_end's exit_status). It is the one mapping from the engine's
// typed errors onto ok, trapped, deadline_exceeded, resource_limit and
// failed: a capsule's run and a tool's invoke are judged alike, and a limit
// is never reported as a crash.
type Ending struct {
	// Status is trace.EndOK, EndTrapped, EndDeadlineExceeded,
	// EndResourceLimit or EndFailed.
	Status string
	// Reason says why, for anything but ok: the trap's message, or the
	// error's text.
	Reason string
	// WaitedOnRuntime is set when the deadline passed while the call waited
	// on the runtime (a host call or native WASI): the run leaves a
	// call_deadline line naming the call.
	WaitedOnRuntime bool
	// Exited is set when the guest called exit; ExitCode is its status.
	Exited   bool
	ExitCode int
	// Cancelled is set when the caller's context ended the call.
	Cancelled bool
	// Err is the engine's error (nil for ok).
	Err error
}

// EndingOf maps a call's error (nil is ok) onto its ending. An exit with
// status 0 is ok.
func EndingOf(err error) Ending {
	if err == nil {
		return Ending{Status: trace.EndOK}
	}
	var (
		trap  *wasmhost.TrapError
		dead  *wasmhost.DeadlineError
		limit *wasmhost.ResourceLimitError
		exit  *wasmhost.ExitError
		canc  *wasmhost.CancelledError
		wl    *WorkdirLimitError
		sl    *StateLimitError
		busy  *StateBusyError
	)
	switch {
	case errors.As(err, &sl):
		// A call stopped because a state store it sees grew past
		// state_max_bytes (or was past it when the call began).
		return Ending{Status: trace.EndResourceLimit, Reason: sl.Error(), Err: err}
	case errors.As(err, &busy):
		// The store's lock was not had by the call's deadline: it never ran.
		return Ending{Status: trace.EndDeadlineExceeded, Reason: busy.Error(), Err: err}
	case errors.As(err, &wl):
		// A call stopped because its work folder grew past the limit is
		// a resource ending, however the stop reached the engine.
		return Ending{Status: trace.EndResourceLimit, Reason: wl.Error(), Err: err}
	case errors.As(err, &dead):
		return Ending{Status: trace.EndDeadlineExceeded, Reason: err.Error(), WaitedOnRuntime: dead.Waiting, Err: err}
	case errors.As(err, &limit):
		return Ending{Status: trace.EndResourceLimit, Reason: err.Error(), Err: err}
	case errors.As(err, &exit):
		if exit.Code == 0 {
			return Ending{Status: trace.EndOK, Exited: true}
		}
		return Ending{Status: trace.EndFailed, Reason: err.Error(), Exited: true, ExitCode: exit.Code, Err: err}
	case errors.As(err, &trap):
		return Ending{Status: trace.EndTrapped, Reason: trap.Message, Err: err}
	case errors.As(err, &canc):
		return Ending{Status: trace.EndFailed, Reason: err.Error(), Cancelled: true, Err: err}
	}
	return Ending{Status: trace.EndFailed, Reason: err.Error(), Err: err}
}
