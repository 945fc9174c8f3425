package wit_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// serveEchoEnv, set in this test binary's environment, makes it serve
// echoMux instead of running tests (echoServerProcess). It is checked in
// init, so the server process starts no engine (TestMain is in package wit).
const serveEchoEnv = "MURMUR_WIT_SERVE_ECHO"

func init() {
	if os.Getenv(serveEchoEnv) != "" {
		serveEcho()
	}
}

// serveEcho serves echoMux on a loopback port, writes its base URL as one
// line to stdout, and exits when stdin ends (its parent closed it or died).
func serveEcho() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	go http.Serve(ln, echoMux(new(atomic.Int64)))
	os.Stdout.WriteString("http://" + ln.Addr().String() + "\n")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// echoServerProcess starts this test binary again as echoMux's server in a
// process of its own and answers its base URL. A server a capsule reaches
// inside a real mur run is another process: with the server in the test's
// own process, the host's request runs the server's goroutine on its own
// thread and wakes nobody, which no run does.
func echoServerProcess(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEchoEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		tb.Fatalf("echo server process: %q, %v", line, err)
	}
	return strings.TrimSpace(line)
}
