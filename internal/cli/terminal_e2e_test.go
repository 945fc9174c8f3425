package cli_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
)

// On a terminal, a cold mur run says which session it is when it starts
// and what it is compiling (issue 14 item 16); into a pipe it says neither.
// The compile cache is this test's own, so the compile is a real, cold one.
func TestRunOnATerminal(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "probe"), "name: probe\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	const comp = "capsule.wasm"

	master, slave := openPTY(t)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
	defer cancel()
	cmd := e2e.CommandContext(ctx, t, murBin(t), homeDir, proj, nil, "run", "--task", "task")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the child holds it; master reads EOF (EIO) once it exits
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&screen, master); close(done) }()
	err := cmd.Wait()
	<-done
	if err != nil {
		t.Fatalf("mur run: %v\nstdout %s\nterminal %s", err, stdout.String(), screen.String())
	}
	got := strings.ReplaceAll(screen.String(), "\r\n", "\n")
	start := regexp.MustCompile(`(?m)^session (ses_[0-9a-z]+) started \(records: /\S+\)$`).FindStringSubmatch(got)
	if start == nil {
		t.Fatalf("no session line on the terminal:\n%s", got)
	}
	if !strings.Contains(got, "\n"+start[1]+": ok\n") {
		t.Errorf("the session line names %s, the run ended:\n%s", start[1], got)
	}
	if stdout.String() != "task: \"task\"\n" {
		t.Errorf("stdout holds %q, want the answer alone", stdout.String())
	}
	if n := len(regexp.MustCompile(`(?m)^compiling \S*/`+regexp.QuoteMeta(comp)+`…$`).FindAllString(got, -1)); n != 1 {
		t.Errorf("want one 'compiling %s…' line, got %d:\n%s", comp, n, got)
	}
	if strings.Index(got, "compiling ") > strings.Index(got, "session ") {
		t.Errorf("the compile line comes after the session line:\n%s", got)
	}

	// Into a pipe: neither line.
	r := runMur(t, homeDir, proj, nil, "run", "--task", "task")
	if r.Code != 0 || strings.Contains(r.Stderr, "session ") || strings.Contains(r.Stderr, "compiling ") {
		t.Errorf("piped run: %+v", r)
	}
}
