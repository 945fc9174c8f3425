package roost

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemon is a real mur-roost process.
type daemon struct {
	cmd    *exec.Cmd
	lines  []string // the start-up lines on stdout
	addr   string   // 127.0.0.1:PORT from the listening line
	stderr *syncBuffer
	extra  syncBuffer // stdout after the start-up lines (expected empty)
	*client
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenRE = regexp.MustCompile(`^mur-roost: listening on (127\.0\.0\.1:\d+)$`)

// startDaemon runs mur-roost with HOME=home on a free port (--port 0 unless
// args name one) and waits for its three start-up lines.
func startDaemon(t testing.TB, home string, args ...string) *daemon {
	t.Helper()
	return startDaemonCmd(t, home, func(args []string) *exec.Cmd { return exec.Command(roostBin, args...) }, args...)
}

// startDaemonCmd is startDaemon with the command built by cmdFor (a wrapper
// that sets limits, for one).
func startDaemonCmd(t testing.TB, home string, cmdFor func([]string) *exec.Cmd, args ...string) *daemon {
	t.Helper()
	hasPort := false
	for _, a := range args {
		if a == "--port" || strings.HasPrefix(a, "--port=") {
			hasPort = true
		}
	}
	if !hasPort {
		args = append([]string{"--port", "0"}, args...)
	}
	cmd := cmdFor(args)
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, cmd.Env...)
	d := &daemon{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = d.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.stop() })
	got := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var lines []string
		for len(lines) < 3 && sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
		for sc.Scan() { // anything after the start-up lines is kept for checks
			d.extra.Write([]byte(sc.Text() + "\n"))
		}
	}()
	select {
	case d.lines = <-got:
	case <-time.After(20 * time.Second):
		t.Fatalf("mur-roost did not print its start-up lines; stderr: %s", d.stderr.String())
	}
	if len(d.lines) != 3 {
		t.Fatalf("start-up lines: %q; stderr: %s", d.lines, d.stderr.String())
	}
	m := listenRE.FindStringSubmatch(d.lines[1])
	if m == nil {
		t.Fatalf("second line is not the listening line: %q", d.lines[1])
	}
	d.addr = m[1]
	d.client = &client{t: t, base: "http://" + d.addr, hc: &http.Client{Timeout: 10 * time.Second},
		running: filepath.Join(home, ".murmur", "running")}
	return d
}

// stop ends the daemon with SIGTERM and waits for it (exit 0 expected).
func (d *daemon) stop() {
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
}

// runOnce runs mur-roost to completion with the given environment and
// returns its exit status, stdout and stderr.
func runOnce(t testing.TB, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(roostBin, args...)
	cmd.Env = env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("mur-roost %q did not exit; stdout %q", args, so.String())
	}
	return cmd.ProcessState.ExitCode(), so.String(), se.String()
}
