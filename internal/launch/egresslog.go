package launch

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"github.com/murmur-go/murmur/internal/logfile"
	"github.com/murmur-go/murmur/internal/wit"
)

// EgressLog is the session's log of its network decisions, under its
// records dir: the egress proxy's allows and refusals, and every wasi:http
// refusal of its tools, hooks and drivers. They go there instead of mur's
// stderr (a raw log line a user cannot act on mid-run); a terminal gets one
// summary line when the session ends.
const EgressLog = "egress.log"

// egressLog is a session's logs/egress.log and the count of refusals
// written to it by wasi:http (the proxy counts its own).
type egressLog struct {
	file    *logfile.CappedLog
	path    string
	refused atomic.Int64
	logger  *slog.Logger // writes to the file only
}

// openEgressLog creates the log lazily (a session that asks for nothing
// leaves no file) and returns it with next wrapped: the wasi:http refusals
// logged through the returned logger land in the file, the rest in next.
func openEgressLog(recordsDir string, next *slog.Logger) (*egressLog, *slog.Logger, error) {
	p := filepath.Join(recordsDir, "logs", EgressLog)
	f, err := logfile.NewCappedLog(p, 0, 0, true)
	if err != nil {
		return nil, next, err
	}
	e := &egressLog{file: f, path: p}
	e.logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return e, slog.New(&egressRouter{out: e.logger.Handler(), next: next.Handler(), refused: &e.refused}), nil
}

func (e *egressLog) Close() error {
	if e == nil {
		return nil
	}
	return e.file.Close()
}

// egressRouter sends the records whose message is wit.HTTPDenied to out,
// counting them, and everything else to next.
type egressRouter struct {
	out, next slog.Handler
	refused   *atomic.Int64
}

func (h *egressRouter) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l) || l >= slog.LevelInfo
}

func (h *egressRouter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == wit.HTTPDenied {
		h.refused.Add(1)
		return h.out.Handle(ctx, r)
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *egressRouter) WithAttrs(as []slog.Attr) slog.Handler {
	return &egressRouter{out: h.out.WithAttrs(as), next: h.next.WithAttrs(as), refused: h.refused}
}

func (h *egressRouter) WithGroup(name string) slog.Handler {
	return &egressRouter{out: h.out.WithGroup(name), next: h.next.WithGroup(name), refused: h.refused}
}

// count is the session's refusals so far, its own and those the proxy px
// (nil: none) counted, with the log's path ("" when there is no log).
func (e *egressLog) count(px interface{ Refused() int64 }) (int64, string) {
	if e == nil {
		return 0, ""
	}
	n := e.refused.Load()
	if px != nil {
		n += px.Refused()
	}
	return n, e.path
}
