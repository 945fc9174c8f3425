// Package roost is mur-roost, the spawn referee daemon (docs/roost.md): it
// registers sessions, approves and refuses spawns against the registry and the
// spawn envelope, and counts what runs.
//
// Everything the daemon knows is held in memory behind one lock: sessions,
// approvals, reservations and the two MAC keys. That is the specification's
// design, not a shortcut: a restart must invalidate every credential and
// approval at once and discard every count a total could be kept in, and the
// only durable input — which capsules are already running — is re-read from
// ~/.murmur/running at start-up, never written.
//
// Nothing runs on a timer. An approval's 60 seconds and a start-up capsule's
// exit are evaluated when a request reads the census, so the figure a caller
// is answered from is exact at the moment of the answer, an idle daemon does
// no work, and there is no sweep to race against a request.
//
// The decisions and the state are the Referee, callable without HTTP; Server
// is the HTTP layer over it, decoding each request, calling one Referee
// method and encoding the answer. The wire types, the header names and a
// typed client are package roostapi, which both sides use.
package roost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/version"
)

// Main runs mur-roost with the given arguments and returns its exit status:
// 0 after --help, --version or a clean shutdown (SIGINT, SIGTERM), 1 when it cannot
// start, 2 for a command line it refuses.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdout, stderr)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if cfg.Help {
		fmt.Fprint(stdout, Usage)
		return 0
	}
	if cfg.Version {
		fmt.Fprintln(stdout, "mur-roost "+version.Version)
		return 0
	}

	// The count is taken before the daemon listens: no request is answered
	// from a count that has not seen the host.
	homeDir, err := home.Dir()
	if err != nil {
		fmt.Fprintln(stderr, lineCannotCount(err.(*diag.Diagnostic).Message))
		return 1
	}
	if cfg.MaxLiveCapsules < 0 {
		cfg.MaxLiveCapsules = DefaultMaxLive()
	}
	if cfg.RegistryPath == "" {
		cfg.RegistryPath = home.Artifacts(homeDir)
	}
	raiseNoFileLimit()
	srv, cnt, err := New(Options{
		MaxDepth:        cfg.MaxDepth,
		MaxConcurrent:   cfg.MaxConcurrent,
		MaxLiveCapsules: cfg.MaxLiveCapsules,
		SpawnAllow:      cfg.SpawnAllow,
		Registry:        StoreRegistry(cfg.RegistryPath),
		RunningDir:      home.Running(homeDir),
	})
	if err != nil {
		fmt.Fprintln(stderr, lineCannotCount(err.Error()))
		return 1
	}
	defer srv.Close()
	fmt.Fprintln(stdout, lineCensus(cnt.Live, cnt.Dir, cnt.Read, float64(cnt.Took.Microseconds())/1000, cnt.Stale, cnt.Unreadable))

	// Loopback only.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		fmt.Fprintf(stderr, "mur-roost: cannot listen on 127.0.0.1:%d: %v\n", cfg.Port, unwrapOp(err))
		return 1
	}
	fmt.Fprintln(stdout, lineListening(ln.Addr().String()))
	fmt.Fprintln(stdout, lineCeiling(cfg.MaxLiveCapsules))

	var hs interface {
		Serve(net.Listener) error
		Shutdown(context.Context) error
	} = newFastServer(newHTTPServer(srv))
	if os.Getenv(envFastPath) == "0" {
		// The off switch: every connection is net/http's own (docs/roost.md).
		fmt.Fprintf(stderr, "mur-roost: HTTP fast path off (%s=0)\n", envFastPath)
		hs = newHTTPServer(srv)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "mur-roost: %v\n", err)
		return 1
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		return 0
	}
}

// newHTTPServer wraps the handler with the timeouts that keep a slow or idle
// client from holding a connection (and a goroutine) for long: every request
// is a small JSON body on loopback, so seconds are generous.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
}

// unwrapOp drops net.OpError's own prefix, keeping the OS's words.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		var sc *os.SyscallError
		if errors.As(op.Err, &sc) {
			return sc.Err
		}
		return op.Err
	}
	return err
}
