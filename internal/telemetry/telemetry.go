// Package telemetry posts a session's OpenTelemetry spans when the manifest
// sets observability.otel_endpoint: one capsule.session span per session and
// one capsule.tool_call span per tool invoke, over OTLP/HTTP (protobuf) to
// <endpoint>/v1/traces.
//
// The trace.jsonl is the record; spans are a copy for a collector. So export
// is asynchronous (a batch processor), never retried, and bounded at
// shutdown: a collector that is down or slow costs the session nothing, and
// every export error goes to logs/otel.log in the records dir instead of the
// person's terminal.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span names (capsules.txt "Script capsules").
const (
	SpanSession  = "capsule.session"
	SpanToolCall = "capsule.tool_call"
)

// Identity names the session the spans describe.
type Identity struct {
	SessionID      string
	CapsuleName    string
	CapsuleVersion string
	Kind           string // script | agent
}

// Options tune export; zero values are the defaults.
type Options struct {
	// ExportTimeout bounds one POST to the collector [2s].
	ExportTimeout time.Duration
	// ShutdownTimeout bounds the flush at the end of the session [2s].
	ShutdownTimeout time.Duration
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
}

// Start opens the exporter and the session span. endpoint is the collector's
// base URL; logPath is logs/otel.log. A bad endpoint is returned as an error
// the caller reports; nothing is sent then.
func Start(endpoint string, id Identity, logPath string, opts Options, started time.Time) (*Session, error) {
	endpoint = strings.TrimRight(strings.TrimSpace(endpoint), "/")
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("observability.otel_endpoint %q is not an http:// or https:// URL", endpoint)
	}
	if opts.ExportTimeout <= 0 {
		opts.ExportTimeout = 2 * time.Second
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 2 * time.Second
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", logPath, err)
	}
	logger := slog.New(slog.NewTextHandler(lf, nil))
	// The SDK reports its own failures through the global handler, which
	// otherwise prints to stderr; one mur process runs one session, so the
	// session's otel.log is the right place for them.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Error("otel", "err", err) }))

	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"),
		otlptracehttp.WithTimeout(opts.ExportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
	)
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("observability.otel_endpoint %q: %w", endpoint, err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", id.CapsuleName),
		attribute.String("service.version", id.CapsuleVersion),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(&loggingExporter{inner: exp, log: logger, endpoint: endpoint},
			sdktrace.WithBatchTimeout(time.Second),
			sdktrace.WithExportTimeout(opts.ExportTimeout)),
	)
	s := &Session{tp: tp, tracer: tp.Tracer("github.com/murmur-go/murmur"), log: logger, logFile: lf, shutdown: opts.ShutdownTimeout}
	s.ctx, s.root = s.tracer.Start(context.Background(), SpanSession,
		trace.WithTimestamp(started),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("session_id", id.SessionID),
			attribute.String("capsule_name", id.CapsuleName),
			attribute.String("capsule_version", id.CapsuleVersion),
			attribute.String("kind", id.Kind),
		))
	logger.Info("exporting spans", "endpoint", endpoint+"/v1/traces", "session_id", id.SessionID)
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
	if status != "ok" {
		sp.SetStatus(codes.Error, errText)
	}
	sp.End(trace.WithTimestamp(end))
}

// End closes the session span with its ending and flushes, waiting at most
// the shutdown timeout. It is safe to call more than once.
func (s *Session) End(exitStatus, reason string, end time.Time) {
	if s == nil {
		return
	}
	s.once.Do(func() {
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
type loggingExporter struct {
	inner    sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.inner.ExportSpans(ctx, spans)
	if err != nil {
		e.log.Error("exporting spans failed", "endpoint", e.endpoint, "spans", len(spans), "err", err)
	} else {
		e.log.Info("exported spans", "spans", len(spans))
	}
	return err
}

func (e *loggingExporter) Shutdown(ctx context.Context) error {
	err := e.inner.Shutdown(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		e.log.Error("exporter shutdown", "err", err)
	}
	return err
}
