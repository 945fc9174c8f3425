package roostapi

import (
	"fmt"
	"net/http"
)

// Error is a refusal: the HTTP status the daemon answered and its sentence,
// word for word. The daemon's referee returns it and the HTTP layer writes
// it; the client returns it for every answer that is not a 200.
type Error struct {
	StatusCode int
	// Message is the daemon's sentence from {"error": "..."}, or, when the
	// body was not that shape, the body itself (bounded and trimmed).
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("mur-roost answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}
