package cli_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/murmur-go/murmur/internal/cli"
)

// TestVersionFastPath: Main's answer to --version (and -v), given before any
// command is built, is byte for byte what the command tree prints for it.
func TestVersionFastPath(t *testing.T) {
	for _, arg := range []string{"--version", "-v"} {
		want, err := cli.CobraOutput(arg)
		if err != nil || want == "" {
			t.Fatalf("cobra %s: %q %v", arg, want, err)
		}
		var out bytes.Buffer
		if code := cli.Main([]string{arg}, &out, io.Discard); code != 0 || out.String() != want {
			t.Errorf("Main(%s) = %d %q, the command tree prints %q", arg, code, out.String(), want)
		}
	}
}
