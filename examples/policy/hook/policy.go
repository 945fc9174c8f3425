// Command hook is the example policy hook: a component of the policy world
// written in Go with the guest kit. It is asked before every call of the
// capsule's model and denies two kinds:
//
//   - a shell command that names a path outside the work folder: an absolute
//     path, a home-relative one (~) or one that climbs out with "..";
//   - a delegate-task whose task mentions a secret-looking string (an API key,
//     a token, a private key block).
//
// Everything else is allowed; the capsule's manifest may still ask an operator.
package main

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

// secret matches strings that look like credentials.
var secret = regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

// check is the policy.
func check(r guest.CallRequest) (guest.Decision, error) {
	switch {
	case r.Kind == guest.CallShell:
		if p := outside(r.Argv); p != "" {
			return guest.Deny("the command names " + p + ", which is outside the work folder"), nil
		}
	case r.ToolName == "delegate-task":
		var in struct {
			Task string `json:"task"`
		}
		if err := json.Unmarshal([]byte(r.Input), &in); err != nil {
			return guest.Decision{}, err // fail-closed: the runtime denies
		}
		if secret.MatchString(in.Task) {
			return guest.Deny("the task mentions a secret-looking string; delegate without it"), nil
		}
	}
	return guest.Allow(), nil
}

// outside returns the first word of the command that names a path outside
// the work folder ("" for none). argv[0] is the resolved binary itself; for a
// shell's "-c <command>" the command is split into rough words (quotes and
// shell punctuation are separators: a policy errs on the side of denying).
func outside(argv []string) string {
	if len(argv) < 2 {
		return ""
	}
	words := argv[1:]
	if len(words) == 2 && words[0] == "-c" {
		words = strings.FieldsFunc(words[1], func(r rune) bool {
			return strings.ContainsRune(" \t\n;|&<>()`'\"=$", r)
		})
	}
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "/"), strings.HasPrefix(w, "~"),
			w == "..", strings.HasPrefix(w, "../"), strings.Contains(w, "/../"), strings.HasSuffix(w, "/.."):
			return w
		}
	}
	return ""
}
