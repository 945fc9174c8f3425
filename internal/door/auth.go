package door

import (
	"crypto/ed25519"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/formation"
)

// Auth is what a door asks of its callers (docs/formations.md): the
// manifest's network.authentication (a bearer token: the operator token or
// a formation member's) and exports.peer_tasks.accept (peer consent, on
// every door).
type Auth struct {
	// Realm is the capsule's full name, in WWW-Authenticate.
	Realm string
	// OperatorToken is set on a door with network.authentication; "" is a
	// public door, which reads no Authorization header.
	OperatorToken string
	// AcceptPeer is exports.peer_tasks.accept.
	AcceptPeer bool
	// FormationID, Member and VerifyKey are set on a launcher-started
	// member's door: formation tokens verify there.
	FormationID, Member string
	VerifyKey           ed25519.PublicKey
}

// The refusals' fixed sentences.
const (
	msgUnauthenticated = "this door answers only requests that carry Authorization: Bearer <token>"
	msgInvalidToken    = "the bearer token was not issued for this door"
	msgPeerNotAccepted = "this capsule takes no tasks from peers (exports.peer_tasks.accept is not true)"
)

// check runs the checks made before a request's body is read: the token,
// then peer consent. caller is the calling member for a formation token
// ("" otherwise).
func (a *Auth) check(r *http.Request) (caller string, ref *Refusal) {
	if a.OperatorToken != "" {
		challenge := `Bearer realm="` + a.Realm + `"`
		hs := r.Header.Values("Authorization")
		if len(hs) == 0 {
			return "", &Refusal{Status: http.StatusUnauthorized, Error: "unauthenticated", Message: msgUnauthenticated,
				Header: http.Header{"Www-Authenticate": {challenge}}}
		}
		invalid := &Refusal{Status: http.StatusUnauthorized, Error: "invalid_token", Message: msgInvalidToken,
			Header: http.Header{"Www-Authenticate": {challenge + `, error="invalid_token"`}}}
		if len(hs) > 1 {
			return "", invalid
		}
		scheme, tok, ok := strings.Cut(hs[0], " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", invalid
		}
		switch {
		case subtle.ConstantTimeCompare([]byte(tok), []byte(a.OperatorToken)) == 1:
		case formation.IsFormationToken(tok):
			var pub ed25519.PublicKey
			if a.FormationID != "" {
				pub = a.VerifyKey
			}
			from, v := formation.VerifyToken(pub, a.FormationID, a.Member, tok)
			switch v {
			case formation.TokenInvalid:
				return "", invalid
			case formation.TokenNotPermitted:
				return "", &Refusal{Status: http.StatusForbidden, Error: "not_permitted",
					Message: fmt.Sprintf("formation member '%s' may not call this member", from)}
			}
			caller = from
		default:
			return "", invalid
		}
	}
	if !a.AcceptPeer && (caller != "" || r.Header.Get(doorapi.HeaderOrigin) == string(doorapi.OriginPeer)) {
		return "", &Refusal{Status: http.StatusForbidden, Error: "peer_not_accepted", Message: msgPeerNotAccepted}
	}
	return caller, nil
}

// scope refuses a formation token's call of a method other than
// SendMessage, GetTask and CancelTask (the only refusal that needs the body).
func (a *Auth) scope(realm, method string) *Refusal {
	switch method {
	case "SendMessage", "GetTask", "CancelTask":
		return nil
	}
	return &Refusal{Status: http.StatusForbidden, Error: "insufficient_scope",
		Message: fmt.Sprintf("a formation member may call SendMessage, GetTask and CancelTask here, not %s", method),
		Header:  http.Header{"Www-Authenticate": {`Bearer realm="` + realm + `", error="insufficient_scope"`}}}
}
