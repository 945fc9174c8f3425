package cli

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal: progress and the session id
// at start are for a person watching, not for a pipe or a log.
func isTerminal(w io.Writer) bool {
	switch v := w.(type) {
	case *colourWriter:
		return isTerminal(v.w)
	case *countingWriter:
		return isTerminal(v.w)
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// colourWanted reports whether text written to w may be coloured: w is a
// terminal, NO_COLOR is unset or empty (no-color.org) and TERM is not dumb.
func colourWanted(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(w)
}

// ANSI SGR sequences for the few words mur colours.
const (
	sgrRed    = "\x1b[1;31m"
	sgrYellow = "\x1b[1;33m"
	sgrGreen  = "\x1b[32m"
	sgrCyan   = "\x1b[36m"
	sgrReset  = "\x1b[0m"
)

// paint colours a status word printed to w (ok, FAIL, an ending) when w
// takes colour; elsewhere it returns word unchanged, so pipes, files and
// --json never see an escape sequence.
func paint(w io.Writer, word string) string {
	if !colourWanted(w) {
		return word
	}
	sgr := sgrRed
	switch word {
	case "ok", "stopped", "running", "pinned", "built", "published", "installed":
		sgr = sgrGreen
	case "warn", "stale", "not running":
		sgr = sgrYellow
	}
	return sgr + word + sgrReset
}

// colourWriter colours the word that opens a diagnostic line on a
// terminal's stderr — "error", "warning" and "hint" — whichever package
// printed it (diagnostics are printed by many, always a line per write).
type colourWriter struct {
	w         io.Writer
	lineStart bool
}

// withColour wraps stderr in a colourWriter when it takes colour.
func withColour(w io.Writer) io.Writer {
	if !colourWanted(w) {
		return w
	}
	return &colourWriter{w: w, lineStart: true}
}

var diagWords = []struct{ prefix, word, sgr string }{
	{"error[", "error", sgrRed},
	{"warning[", "warning", sgrYellow},
	{"  hint: ", "hint", sgrCyan},
}

func (c *colourWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	start := c.lineStart
	c.lineStart = p[len(p)-1] == '\n'
	if !start {
		return c.w.Write(p)
	}
	for _, d := range diagWords {
		if bytes.HasPrefix(p, []byte(d.prefix)) {
			i := bytes.Index(p, []byte(d.word))
			var b bytes.Buffer
			b.Write(p[:i])
			b.WriteString(d.sgr + d.word + sgrReset)
			b.Write(p[i+len(d.word):])
			if _, err := c.w.Write(b.Bytes()); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.w.Write(p)
}
