package launch

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/wit"
)

// The session's logger sends wasi:http refusals to logs/egress.log, counted,
// and everything else where it went before; a session that refuses nothing
// leaves no file.
func TestEgressLogRoutesRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o700); err != nil { // the session makes it
		t.Fatal(err)
	}
	var next bytes.Buffer
	el, lg, err := openEgressLog(dir, slog.New(slog.NewTextHandler(&next, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "logs", EgressLog)
	lg.Warn("something else", "k", "v")
	lg.Info("below next's level")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("egress.log exists before any refusal: %v", err)
	}
	lg.With("tool", "acme/echo").Info(wit.HTTPDenied, "url", "https://example.com/")
	lg.Warn(wit.HTTPDenied, "url", "http://10.0.0.1/")
	if err := el.Close(); err != nil {
		t.Fatal(err)
	}
	n, path := el.count(nil)
	if n != 2 || path != p {
		t.Errorf("count = %d, %q; want 2, %q", n, path, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), wit.HTTPDenied); got != 2 || !strings.Contains(string(b), "tool=acme/echo") {
		t.Errorf("egress.log:\n%s", b)
	}
	if s := next.String(); !strings.Contains(s, "something else") || strings.Contains(s, wit.HTTPDenied) || strings.Contains(s, "below next's level") {
		t.Errorf("the rest went astray:\n%s", s)
	}
	if n, _ := el.count(refusedBy(3)); n != 5 {
		t.Errorf("with the proxy's 3, count = %d, want 5", n)
	}
	var none *egressLog
	if n, path := none.count(refusedBy(1)); n != 0 || path != "" || none.Close() != nil {
		t.Errorf("a nil log counts %d at %q", n, path)
	}
}

type refusedBy int64

func (r refusedBy) Refused() int64 { return int64(r) }
