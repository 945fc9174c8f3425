package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
)

// jsonError is the error object every --json command prints on stdout when
// it fails (docs/cli.md "Machine-readable output"):
//
//	{"error":{"code":"E-REG-001","message":"…","hint":"…"}}
//
// code and message are always there; hint only when the diagnostic has one.
// message is the diagnostic's text without its "error[CODE]: " prefix, on one
// line, as the stderr form prints it.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// errorBody is err as the JSON error's body; an error without a code gets
// fallback, as diag.Print does.
func errorBody(err error, fallback string) jsonErrorBody {
	var d *diag.Diagnostic
	if !errors.As(err, &d) {
		d = diag.New(fallback, "%s", err.Error())
	}
	one := func(s string) string { return strings.ReplaceAll(s, "\n", " ") }
	return jsonErrorBody{Code: d.Code, Message: one(d.Message), Hint: one(d.Hint)}
}

func writeJSONError(w io.Writer, err error, fallback string) {
	b, _ := json.Marshal(jsonError{Error: errorBody(err, fallback)})
	fmt.Fprintln(w, string(b))
}
