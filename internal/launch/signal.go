package launch

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Signalled is the cause of a run's context ended by SIGTERM or SIGINT.
type Signalled struct {
	Signal os.Signal
	// again is closed when a second signal arrives (nil: never).
	again chan struct{}
}

func (s *Signalled) Error() string { return s.Signal.String() + " received" }

// Reason is the session_end reason the signal gives (docs/running-capsules.md).
func (s *Signalled) Reason() string {
	if s.Signal == syscall.SIGINT {
		return "interrupted"
	}
	return "terminated"
}

// ExitCode is the status a run ended by the signal exits with: 128 + signo
// (143 for SIGTERM, 130 for SIGINT).
func (s *Signalled) ExitCode() int {
	if n, ok := s.Signal.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// NotifyContext is signal.NotifyContext for SIGTERM and SIGINT whose cause,
// read with context.Cause, is a *Signalled naming the signal: the run needs
// to know which one arrived to word its ending and exit status.
func NotifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		var first *Signalled
		for {
			select {
			case sig := <-ch:
				if first == nil {
					first = &Signalled{Signal: sig, again: make(chan struct{})}
					cancel(first)
					continue
				}
				close(first.again) // a second signal ends the wind-down at once
				<-done
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// signalled returns the signal that ended ctx, if one did.
func signalled(ctx context.Context) (*Signalled, bool) {
	var s *Signalled
	if errors.As(context.Cause(ctx), &s) {
		return s, true
	}
	return nil, false
}
