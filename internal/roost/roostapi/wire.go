// Package roostapi is mur-roost's HTTP interface as Go: the request and
// response bodies of every endpoint, the header names, and a typed client
// (docs/roost.md).
//
// The daemon encodes and decodes with these same types, so a field renamed
// here is renamed on both sides at once. The client is what a capsule's
// runtime uses to register, ask for spawns and deregister: every call takes a
// context, and the two tokens the daemon mints travel as Credential and
// Approval values, which hold the token in memory, put it in the request
// header, and print and log as "[redacted]".
//
// The package imports only the standard library, so anything may link it.
package roostapi

// Request headers. HTTP header names are case-insensitive; these are the
// canonical spellings Go's net/http keys them by.
const (
	// HeaderCredential carries the credential POST /register minted for the
	// calling session, at POST /spawn and POST /deregister.
	HeaderCredential = "X-Murmur-Spawn-Credential"
	// HeaderApproval carries, at POST /register, the approval POST /spawn
	// granted the session's parent. Its presence selects the approval path.
	HeaderApproval = "X-Murmur-Spawn-Approval"
)

// MaxBodyBytes is the largest request body the daemon reads; one byte more
// is a 400.
const MaxBodyBytes = 64 << 10

// Session statuses, as GET /status reports them. StatusComplete and
// StatusFailed are also the two outcomes POST /deregister takes.
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusFailed   = "failed"
)

// Endpoint paths. GET /status takes the session id after PathStatus.
const (
	PathHealth     = "/health"
	PathSpawn      = "/spawn"
	PathRegister   = "/register"
	PathDeregister = "/deregister"
	PathStatus     = "/status/"
)

// SpawnRequest is the body of POST /spawn.
type SpawnRequest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// SpawnResponse is the 200 body of POST /spawn: the approval and the artifact
// it names, echoed so the caller launches the one the referee judged.
// Field order is the wire order.
type SpawnResponse struct {
	Approval    string `json:"approval"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	SHA256      string `json:"sha256"`
	ExpiresAtMS int64  `json:"expires_at_ms"`
}

// RegisterRequest is the body of POST /register.
type RegisterRequest struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name"`
	Version   string `json:"version"`
}

// RegisterResponse is the 200 body of POST /register.
type RegisterResponse struct {
	Credential string `json:"credential"`
}

// DeregisterRequest is the body of POST /deregister.
type DeregisterRequest struct {
	Outcome string `json:"outcome"`
}

// StatusResponse is the 200 body of GET /status/{session_id}. Field order is
// the wire order.
type StatusResponse struct {
	Status         string `json:"status"`
	DepthRemaining int    `json:"depth_remaining"`
	LiveChildren   int    `json:"live_children"`
	LiveCapsules   int    `json:"live_capsules"`
}

// ErrorResponse is the body of every refusal: {"error": "<sentence>"}.
type ErrorResponse struct {
	Error string `json:"error"`
}
