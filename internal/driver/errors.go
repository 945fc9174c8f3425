package driver

import (
	"context"
	"errors"
	"fmt"
)

// Kind says what made a driver call fail, so the loop can tell a refused key
// from a rate limit from a dead provider from a garbled answer.
type Kind int

const (
	// KindKeyRefused: the provider answered 401, the key was refused.
	KindKeyRefused Kind = iota + 1
	// KindRateLimited: the provider still answered 429 after the retries.
	KindRateLimited
	// KindUnreachable: no answer could be had (connection refused, reset, DNS,
	// TLS) after the retries.
	KindUnreachable
	// KindMalformed: the provider answered something that is not its protocol
	// (a body that is not JSON, an event of the wrong shape).
	KindMalformed
	// KindIncomplete: the answer stopped before its end (a stream cut mid-event).
	KindIncomplete
	// KindProvider: the provider answered another error status (400, 403, 404,
	// 5xx after the retries, a redirect, which is never followed).
	KindProvider
	// KindCanceled: the call's context ended first (its deadline, or a cancel);
	// errors.Is(err, context.DeadlineExceeded) tells which.
	KindCanceled
	// KindExhausted: the replay driver has no response left.
	KindExhausted
)

var kindWords = map[Kind]string{
	KindKeyRefused:  "key refused",
	KindRateLimited: "rate limited",
	KindUnreachable: "provider unreachable",
	KindMalformed:   "malformed response",
	KindIncomplete:  "incomplete response",
	KindProvider:    "provider error",
	KindCanceled:    "canceled",
	KindExhausted:   "transcript exhausted",
}

func (k Kind) String() string {
	if s, ok := kindWords[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a failed driver call.
type Error struct {
	Kind    Kind
	Driver  string // the driver's name
	Status  int    // the HTTP status, when there was one
	Message string // what happened, for a person
	Err     error  // the cause, may be nil
}

func (e *Error) Error() string {
	s := e.Driver + ": " + e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrKeyRefused) and the like match any *Error of that
// kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Driver == "" && t.Message == "" && t.Kind == e.Kind
}

// Sentinels for errors.Is; each matches every *Error of its kind.
var (
	ErrKeyRefused  = &Error{Kind: KindKeyRefused}
	ErrRateLimited = &Error{Kind: KindRateLimited}
	ErrUnreachable = &Error{Kind: KindUnreachable}
	ErrMalformed   = &Error{Kind: KindMalformed}
	ErrIncomplete  = &Error{Kind: KindIncomplete}
	ErrProvider    = &Error{Kind: KindProvider}
	ErrCanceled    = &Error{Kind: KindCanceled}
	ErrExhausted   = &Error{Kind: KindExhausted}
)

// KindOf returns the Kind of the first *Error in err's chain, or 0.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// KeyRefused builds the error of a 401: it says the key was refused and names
// the manifest variable it came from, so a person knows which one to fix.
func KeyRefused(driver, keyVariable string, cause error) *Error {
	where := "the configured gateway.api_key"
	if keyVariable != "" {
		where = "the key in " + keyVariable
	}
	return &Error{
		Kind:    KindKeyRefused,
		Driver:  driver,
		Status:  401,
		Message: fmt.Sprintf("the provider refused %s (HTTP 401): check that %s holds a valid API key for this endpoint", where, nameOr(keyVariable, "gateway.api_key")),
		Err:     cause,
	}
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Canceled builds the error of a call whose context ended; it wraps ctx.Err()
// so errors.Is(err, context.DeadlineExceeded) holds for a deadline.
func Canceled(driver string, ctx context.Context) *Error {
	msg := "the call was canceled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg = "no answer before the call deadline"
	}
	return &Error{Kind: KindCanceled, Driver: driver, Message: msg, Err: ctx.Err()}
}
