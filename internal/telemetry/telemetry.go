// Package telemetry posts a session's OpenTelemetry spans when the manifest
// sets observability.otel_endpoint (or the environment the standard
// OTEL_EXPORTER_OTLP_* variables), over OTLP/HTTP (protobuf) to
// <endpoint>/v1/traces: one capsule.session span per session; for a script
// capsule a capsule.tool_call span per tool invoke under it; for an agent a
// capsule.task span per task under it, and under each task a
// capsule.inference, capsule.tool_call, capsule.shell or capsule.delegation
// span per trace line of the same name. docs/telemetry.md describes the
// spans and their attributes.
//
// Spans come from the trace: the session's recorder hands every line to
// Session.Line (trace.SpanSink), and lines.go is the one table of which
// line becomes which span. The trace.jsonl is the record; spans are a copy
// for a collector. So export
// is asynchronous (a batch processor), never retried, and bounded at
// shutdown: a collector that is down or slow costs the session nothing, and
// export failures go to logs/otel.log in the records dir instead of the
// person's terminal: the first failure is one line, later ones are counted
// and a collector that comes back says so once.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span names (docs/telemetry.md).
const (
	SpanSession    = "capsule.session"
	SpanToolCall   = "capsule.tool_call"
	SpanTask       = "capsule.task"
	SpanInference  = "capsule.inference"
	SpanShell      = "capsule.shell"
	SpanDelegation = "capsule.delegation"
	// SpanMemberCall is a formation member's call-member call
	// (docs/formations.md).
	SpanMemberCall = "capsule.member_call"
	// SpanCallDenied and SpanApproval are the policy gate's (docs/policy.md).
	SpanCallDenied = "capsule.call_denied"
	SpanApproval   = "capsule.approval"
)

// Identity names the session the spans describe.
type Identity struct {
	SessionID      string
	CapsuleName    string
	CapsuleVersion string
	Kind           string // script | agent
	FormationID    string // "" for a session in no formation
}

// Options tune export; zero values are the defaults.
type Options struct {
	// ExportTimeout bounds one POST to the collector [2s].
	ExportTimeout time.Duration
	// ShutdownTimeout bounds the flush at the end of the session [2s].
	ShutdownTimeout time.Duration
	// QueueSize is how many ended spans wait for export before new ones
	// are dropped rather than waited on [2048].
	QueueSize int
}

// Session is one session's span exporter. A nil *Session does nothing, so
// callers need no "is OTel on" checks.
type Session struct {
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	ctx      context.Context
	root     trace.Span
	log      *slog.Logger
	logFile  *os.File
	shutdown time.Duration
	once     sync.Once

	// open holds the tasks not yet ended, so End can close what a
	// wind-down left open instead of losing those spans.
	mu    sync.Mutex
	open  map[*Task]struct{}
	dlg   map[*Delegation]struct{} // a script's delegations
	ended bool
	// byLine finds the task of a line by its event_id (a task_start's or
	// an inference's), and delegations an open delegation span by its
	// delegation_id: how Line places the lines under it.
	byLine      map[string]*Task
	delegations map[string]*Delegation
	// plans are the open plan and plan-step spans (plan.go).
	plans planSpans
	// calls are the tool_call spans OpenToolCall opened, by parent line
	// and tool_call_id, until their line (mcp.go).
	calls map[string]*openCall
	// mcpOpen holds each MCP server start until its mcp_server_end.
	mcpOpen sync.Map

	// ending is held for reading by a Task.End in flight, and taken by End
	// before the exporter shuts down: a task that left the open set just
	// before End looked at it still exports its span, so no child span is
	// exported without its task.
	ending sync.RWMutex
}

// Start opens the exporter and the session span. endpoint is the manifest's
// observability.otel_endpoint, the collector's base URL; when it is empty the
// standard OTEL_EXPORTER_OTLP_* variables name the collector (resolveTarget).
// logPath is logs/otel.log. A bad endpoint is returned as an error
// the caller reports; nothing is sent then.
func Start(endpoint string, id Identity, logPath string, opts Options, started time.Time) (*Session, error) {
	tgt, err := resolveTarget(endpoint, opts.ExportTimeout, os.Getenv)
	if err != nil {
		return nil, err
	}
	opts.ExportTimeout = tgt.timeout
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 2 * time.Second
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", logPath, err)
	}
	// Debug, so a malformed traceparent leaves its line in otel.log.
	logger := slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The SDK reports its own failures through the global handler, which
	// otherwise prints to stderr; one mur process runs one session, so the
	// session's otel.log is the right place for them.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Error("otel", "err", err) }))
	for _, n := range tgt.notes {
		logger.Warn(n)
	}
	exp := newOTLPExporter(tgt)
	endpoint = tgt.base
	res := resource.NewSchemaless(
		attribute.String("service.name", id.CapsuleName),
		attribute.String("service.version", id.CapsuleVersion),
	)
	if opts.QueueSize <= 0 {
		opts.QueueSize = sdktrace.DefaultMaxQueueSize
	}
	// The batcher never blocks a span's End: with the queue full (a slow
	// or dead collector) a span is dropped, never waited on.
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(&loggingExporter{inner: exp, log: logger, endpoint: endpoint},
			sdktrace.WithBatchTimeout(time.Second),
			sdktrace.WithExportTimeout(opts.ExportTimeout),
			sdktrace.WithMaxQueueSize(opts.QueueSize),
			sdktrace.WithMaxExportBatchSize(min(opts.QueueSize, sdktrace.DefaultMaxExportBatchSize))),
	)
	s := &Session{tp: tp, tracer: tp.Tracer("github.com/murmur-go/murmur"), log: logger, logFile: lf,
		shutdown: opts.ShutdownTimeout, open: map[*Task]struct{}{}, dlg: map[*Delegation]struct{}{},
		byLine: map[string]*Task{}, delegations: map[string]*Delegation{}, calls: map[string]*openCall{}}
	s.ctx, s.root = s.tracer.Start(context.Background(), SpanSession,
		trace.WithTimestamp(started),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("session_id", id.SessionID),
			attribute.String("capsule_name", id.CapsuleName),
			attribute.String("capsule_version", id.CapsuleVersion),
			attribute.String("kind", id.Kind),
		))
	if id.FormationID != "" {
		s.root.SetAttributes(attribute.String("murmur.formation_id", id.FormationID))
	}
	logger.Info("exporting spans", "endpoint", tgt.url, "session_id", id.SessionID)
	return s, nil
}

// ToolCall records one capsule.tool_call span under the session span.
func (s *Session) ToolCall(tool string, start, end time.Time, inBytes, outBytes int, status, errText string) {
	if s == nil {
		return
	}
	_, sp := s.tracer.Start(s.ctx, SpanToolCall, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("tool_name", tool),
		attribute.Int("input_bytes", inBytes),
		attribute.Int("output_bytes", outBytes),
		attribute.Int64("duration_ms", end.Sub(start).Milliseconds()),
		attribute.String("status", status),
	))
	if errText != "" {
		sp.SetAttributes(attribute.String("error", errText))
	}
	if status != "ok" {
		sp.SetStatus(codes.Error, errText)
	}
	sp.End(trace.WithTimestamp(end))
}

// End closes the session span with its ending and flushes, waiting at most
// the shutdown timeout. A task, delegation or opened tool call still open is
// ended first, at end, marked as cut short by the session's end. It is safe to call more than
// once; calls on the session's tasks after it do nothing.
func (s *Session) End(exitStatus, reason string, end time.Time) {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.mu.Lock()
		s.ended = true
		open, dlg, calls := s.open, s.dlg, s.calls
		s.open, s.dlg, s.byLine, s.delegations, s.calls = nil, nil, nil, nil, nil
		s.mu.Unlock()
		for _, c := range calls {
			c.cutShort("the session ended before the call did", end)
		}
		for t := range open {
			t.cutShort(end)
		}
		for d := range dlg {
			d.End(DelegationLine{Outcome: "terminated", Reason: "the session ended first"}, end)
		}
		s.ending.Lock() // every Task.End in flight has ended its span
		//lint:ignore SA2001 a barrier: taking the lock waited out every Task.End in flight
		s.ending.Unlock()
		s.root.SetAttributes(attribute.String("exit_status", exitStatus))
		if reason != "" {
			s.root.SetAttributes(attribute.String("reason", reason))
		}
		if exitStatus != "ok" {
			s.root.SetStatus(codes.Error, exitStatus)
		}
		s.root.End(trace.WithTimestamp(end))
		ctx, cancel := context.WithTimeout(context.Background(), s.shutdown)
		defer cancel()
		if err := s.tp.Shutdown(ctx); err != nil {
			s.log.Error("shutting the exporter down", "err", err)
		}
		s.logFile.Close()
	})
}

// loggingExporter sends spans through inner and writes any failure to
// otel.log, so export errors never reach the terminal or stop anything.
//
// A collector that stays down would otherwise write a line per batch, so only
// the first failure of a run of failures is logged, and the batch's error is
// not returned: the SDK would hand it to the global error handler, a second
// line for the same failure. The batch is dropped either way (no retries).
type loggingExporter struct {
	inner    sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string

	mu       sync.Mutex
	failures int // consecutive failed exports
	dropped  int // spans in them
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.inner.ExportSpans(ctx, spans)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.failures++
		e.dropped += len(spans)
		if e.failures == 1 {
			e.log.Error("exporting spans failed; later failures are not logged until an export succeeds",
				"endpoint", e.endpoint, "spans", len(spans), "err", err)
		}
		return nil
	}
	if e.failures > 0 {
		e.log.Info("exporting spans again", "endpoint", e.endpoint, "failed_exports", e.failures, "dropped_spans", e.dropped)
		e.failures, e.dropped = 0, 0
	}
	e.log.Debug("exported spans", "spans", len(spans))
	return nil
}

func (e *loggingExporter) Shutdown(ctx context.Context) error {
	err := e.inner.Shutdown(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		e.log.Error("exporter shutdown", "err", err)
	}
	return err
}
