// Package hostapi implements the murmur:* host interfaces a script capsule's
// component imports (contracts §9): murmur:tool-registry/invoke runs the tool
// artifacts its manifest declares, murmur:artifact-manager/manage lists,
// describes, searches, pulls and removes artifacts of the stores, and
// murmur:message/send sends an A2A 1.0 message to a peer capsule.
//
// One Session serves one capsule session. It owns what outlives a single call:
// the compiled tool components (compiled once, instantiated fresh per invoke
// so a trap in one call cannot leak into the next), the effective grants that
// every call is checked against, and the HTTP client of message/send. Every
// call that the spec asks to record goes through a Recorder (the script
// runtime's, which also feeds the OpenTelemetry spans), so the trace's totals
// and lines can never disagree.
//
// Nothing here trusts the guest: names, versions and URLs are validated, the
// grants are checked before any store or network is touched, and a failure is
// answered as the WIT err(string) — the capsule goes on — never as a trap.
package hostapi
