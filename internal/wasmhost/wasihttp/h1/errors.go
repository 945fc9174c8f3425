package h1

import "errors"

// The limits an exchange runs under: each is the error a read, write or
// dial answers when its limit passes (Classify maps them onto error-codes).
var (
	// ErrCallDeadline is a read or write reaching the call's deadline.
	ErrCallDeadline = errors.New("the call's deadline passed")
	// ErrKilled is an operation on a connection its exchange gave up (the
	// run cancelled, the future or body dropped): Conn.Kill.
	ErrKilled = errors.New("murmur: the request was cancelled")
	// ErrConnectTimeout is the request-options connect timeout passing.
	ErrConnectTimeout = errors.New("connect timeout")
	// ErrFirstByteTimeout is the first-byte timeout passing.
	ErrFirstByteTimeout = errors.New("first-byte timeout")
	// ErrBetweenBytes is the between-bytes timeout passing.
	ErrBetweenBytes = errors.New("between-bytes timeout")
)
