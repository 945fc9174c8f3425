// Package diag holds Murmur's diagnostics: the coded errors and warnings a person
// reads (docs/diagnostics.md). Every failure a user can hit leaves the program as a
// *Diagnostic, so the CLI prints one shape: "error[E-AREA-NNN]: what happened",
// optionally "  hint: what to do", and exits with the diagnostic's status.
//
// Codes are reserved per area at the top of docs/diagnostics.md; that file lists
// every code with its cause and fix.
package diag

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit statuses (docs/cli.md "Errors and exit statuses").
const (
	ExitFailure = 1 // any failure
	ExitUsage   = 2 // a usage error: unknown flag, wrong argument count
)

// Diagnostic is an error with a code, a message and an optional hint.
// It wraps the underlying cause (if any) so errors.Is/As keep working.
type Diagnostic struct {
	Code    string // "E-MAN-003"
	Message string // what happened, one line
	Hint    string // what to do, may be empty
	Exit    int    // process exit status; 0 means ExitFailure
	Err     error  // the cause, may be nil
}

// New returns a diagnostic with the given code and message.
func New(code, format string, args ...any) *Diagnostic {
	return &Diagnostic{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a diagnostic whose message is the formatted text followed by the
// cause's text, keeping the cause for errors.Is/As.
func Wrap(err error, code, format string, args ...any) *Diagnostic {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Diagnostic{Code: code, Message: msg, Err: err}
}

// WithHint sets the hint and returns d, for chaining.
func (d *Diagnostic) WithHint(format string, args ...any) *Diagnostic {
	d.Hint = fmt.Sprintf(format, args...)
	return d
}

// WithExit sets the exit status and returns d, for chaining.
func (d *Diagnostic) WithExit(status int) *Diagnostic {
	d.Exit = status
	return d
}

func (d *Diagnostic) Error() string { return "error[" + d.Code + "]: " + d.Message }

func (d *Diagnostic) Unwrap() error { return d.Err }

// ExitStatus is the status a process ending on d exits with.
func (d *Diagnostic) ExitStatus() int {
	if d.Exit == 0 {
		return ExitFailure
	}
	return d.Exit
}

// Code returns the code of the first Diagnostic in err's chain, or "".
func Code(err error) string {
	var d *Diagnostic
	if errors.As(err, &d) {
		return d.Code
	}
	return ""
}

// Is reports whether err carries a Diagnostic with the given code.
func Is(err error, code string) bool { return Code(err) == code }

// Print writes err to w in the diagnostic form and returns the exit status the
// program should end with. An error without a code is printed under the fallback
// code so that nothing reaches a person uncoded.
func Print(w io.Writer, err error, fallback string) int {
	if err == nil {
		return 0
	}
	var d *Diagnostic
	if !errors.As(err, &d) {
		d = &Diagnostic{Code: fallback, Message: err.Error()}
	}
	// A message of several lines (a guest's last stderr lines under an
	// ending) keeps them, each indented under the error line, so that none
	// can pass for a line of its own.
	first, rest, more := strings.Cut(d.Error(), "\n")
	fmt.Fprintln(w, first)
	if more {
		for _, l := range strings.Split(strings.TrimRight(rest, "\n"), "\n") {
			fmt.Fprintln(w, "  "+strings.ReplaceAll(l, "\r", " "))
		}
	}
	if d.Hint != "" {
		fmt.Fprintln(w, "  hint: "+oneLine(d.Hint))
	}
	return d.ExitStatus()
}

// Warning is a coded warning: something a person should know that does not stop
// the work.
type Warning struct {
	Code    string // "W-SEC-007"
	Message string
}

// Warn builds a warning.
func Warn(code, format string, args ...any) Warning {
	return Warning{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (w Warning) String() string { return "warning[" + w.Code + "]: " + w.Message }

// PrintWarnings writes each warning on its own line.
func PrintWarnings(w io.Writer, ws []Warning) {
	for _, x := range ws {
		fmt.Fprintln(w, oneLine(x.String()))
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// EditDistance is the Levenshtein distance between a and b, in bytes: how
// "did you mean" suggestions (flags, manifest keys) find the near word.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
