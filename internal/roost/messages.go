package roost

import "fmt"

// Every sentence a caller or operator reads from mur-roost is the
// specification's, word for word, and carries no diagnostic code. They are
// kept together here so a reviewer can hold this file against the text.

// msgIdentity is the one identity refusal, the same on every endpoint and
// whether or not the named session exists.
const msgIdentity = "not authorised: this daemon answers only a credential it minted for a running session, and an approval it minted for that same session"

// Approval-state refusals.
const (
	msgApprovalExpired  = "this spawn approval has passed its expiry; an approval is valid for 60 seconds from the POST /spawn that granted it"
	msgApprovalReplayed = "this spawn approval has already been redeemed; an approval covers one launch, so ask POST /spawn for another"
)

func msgApprovalCoordinates(approved, presented string) string {
	return fmt.Sprintf("this spawn approval was granted for '%s', not '%s'", approved, presented)
}

func msgApprovalBytes(coords, approvedSHA, resolvedSHA string) string {
	return fmt.Sprintf("'%s' now resolves to a different artifact than the one this spawn approval was granted for (approved sha256 %s, resolved sha256 %s)", coords, approvedSHA, resolvedSHA)
}

// Name-list refusals: each names the list an operator has to edit.
func msgNotInParentAllow(name string) string {
	return fmt.Sprintf("capsule '%s' is not in parent's spawn_allow", name)
}

func msgNotInSpawnAllow(name string) string {
	return fmt.Sprintf("capsule '%s' is not in --spawn-allow", name)
}

// Bounds, with their figures.
func msgDepth(maxDepth int) string {
	return fmt.Sprintf("delegation depth bound reached: this daemon allows %d levels of delegation below a top-level capsule (--max-depth %d), and this session has none left to spend — a capsule whose capabilities.spawn.allow names itself terminates here rather than recursing", maxDepth, maxDepth)
}

func msgCeiling(max, holding int) string {
	return fmt.Sprintf("machine capsule ceiling reached: this daemon allows %d live capsules on this host across every formation (--max-live-capsules %d), and it is already holding %d — this is the host's ceiling rather than this capsule's own --max-concurrent, so narrowing the formation does not help; the same request may be granted once other capsules finish", max, max, holding)
}

func msgConcurrency(max, holding int) string {
	return fmt.Sprintf("delegation concurrency bound reached: this daemon allows a capsule %d live children at a time (--max-concurrent %d), and this session already holds %d — wait for one to finish, or raise --max-concurrent", max, max, holding)
}

const msgSessionNotFound = "session not found"

// Routing refusals: what Go's ServeMux would answer, in JSON.
const (
	msgNotFound         = "not found"
	msgMethodNotAllowed = "method not allowed"
)

// Bad bodies (400). The specification gives these no sentence; they are the
// daemon's own, and pinned by tests all the same.
const (
	msgBodyUnreadable  = "request body could not be read"
	msgBodyNotObject   = "request body is not valid JSON: a JSON object is required"
	msgSessionIDEmpty  = "session_id is empty"
	msgNameRequired    = "name is required"
	msgVersionRequired = "version is required"
	msgOutcome         = "outcome must be complete or failed"
)

func msgBodyTooLarge(max int) string {
	return fmt.Sprintf("request body is larger than %d bytes", max)
}

func msgBodyInvalid(problem string) string { return "request body is not valid JSON: " + problem }

func msgFieldNotString(key string) string {
	return fmt.Sprintf("request body is not valid JSON: field %s must be a string", key)
}

func msgSessionIDTooLong(n, max int) string {
	return fmt.Sprintf("session_id is too long: its credential would be %d bytes, more than %d", n, max)
}

func msgNotFullName(name string) string {
	return fmt.Sprintf("name is not a full name, <scope>/<name>: '%s'", name)
}

// msgUnresolved is the 500 of /spawn and /register.
func msgUnresolved(name, version string, err error) string {
	return fmt.Sprintf("capsule '%s@%s' could not be resolved from the registry: %v", name, version, err)
}

// Start-up lines (stdout) and refusals to start (stderr).
func lineCensus(live int, dir string, read int, ms float64, stale, unreadable int) string {
	return fmt.Sprintf("mur-roost: %d live capsules already running on this host, counted from %s (%d records read in %.1f ms; %d stale and %d unreadable not counted)", live, dir, read, ms, stale, unreadable)
}

func lineListening(addr string) string { return "mur-roost: listening on " + addr }

func lineCeiling(n int) string {
	return fmt.Sprintf("mur-roost: machine ceiling %d live capsules (--max-live-capsules)", n)
}

func lineCannotCount(reason string) string {
	return "mur-roost: cannot count the capsules already running on this host: " + reason
}

func lineUnknownArgument(flag string) string { return "unknown argument: " + flag }
