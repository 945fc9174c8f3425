package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// TooLargeError is a response body passing its bound: N is the bytes it
// had reached.
type TooLargeError struct{ N uint64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the response body passed its bound at %d bytes", e.N)
}

// ReadBody reads resp's body through buf into sink, at most max bytes (the
// part within max is still handed to sink before the *TooLargeError). The
// between-bytes timeout counts only the time spent waiting on the server:
// it is stopped while sink runs (a live stream's sink waits for the
// guest); when it passes, cancel is called and ReadBody answers
// ErrBetweenBytes. eof is set when the body was read to its clean end; a
// sink's error ends the read and is answered as it is, as is a read's.
func ReadBody(resp *http.Response, buf []byte, max int64, between time.Duration, cancel context.CancelFunc, sink func([]byte) error) (eof bool, err error) {
	var timer *time.Timer
	var mu sync.Mutex
	timedOut := false
	if between > 0 {
		timer = time.AfterFunc(between, func() {
			mu.Lock()
			timedOut = true
			mu.Unlock()
			cancel()
		})
		defer timer.Stop()
	}
	var n int64
	for {
		k, rerr := resp.Body.Read(buf)
		if timer != nil {
			timer.Stop()
		}
		if k > 0 {
			if n+int64(k) > max {
				sink(buf[:max-n])
				return false, &TooLargeError{N: uint64(n + int64(k))}
			}
			if err := sink(buf[:k]); err != nil {
				return false, err
			}
			n += int64(k)
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return true, nil
			}
			mu.Lock()
			to := timedOut
			mu.Unlock()
			if to {
				return false, ErrBetweenBytes
			}
			return false, rerr
		}
		if timer != nil {
			timer.Reset(between)
		}
	}
}
