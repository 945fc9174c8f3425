package script

import (
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/telemetry"
	"github.com/murmur-go/murmur/internal/trace"
)

// Recorder is the one place a session's events go through: the trace line
// and, when OTel is on, the span. Host interfaces (tool invoke, artifact
// pull, message send) record through it, so the session_end totals always
// equal the lines written. It is safe for concurrent use.
type Recorder struct {
	tw      *trace.Writer
	tel     *telemetry.Session // nil when observability.otel_endpoint is unset
	started time.Time

	mu         sync.Mutex
	toolCalls  int
	toolErrors int
	ended      bool
}

// NewRecorder records into tw (and tel, which may be nil) for a session
// that started at started.
func NewRecorder(tw *trace.Writer, tel *telemetry.Session, started time.Time) *Recorder {
	return &Recorder{tw: tw, tel: tel, started: started}
}

// Trace is the session's trace writer.
func (r *Recorder) Trace() *trace.Writer { return r.tw }

// ToolCall records one murmur:tool-registry/invoke that began at start and
// has just returned. errText is "" for a call that succeeded.
func (r *Recorder) ToolCall(tool string, start time.Time, inBytes, outBytes int, errText string) {
	end := time.Now()
	status := "ok"
	var errp *string
	if errText != "" {
		status = "error"
		errp = &errText
	}
	r.mu.Lock()
	r.toolCalls++
	if errText != "" {
		r.toolErrors++
	}
	r.mu.Unlock()
	r.tw.Emit(trace.ToolCall{ToolName: tool, InputBytes: inBytes, OutputBytes: outBytes,
		DurationMS: end.Sub(start).Milliseconds(), Status: status, Error: errp})
	r.tel.ToolCall(tool, start, end, inBytes, outBytes, status, errText)
}

// ArtifactPulled records one pull through murmur:artifact-manager.
func (r *Recorder) ArtifactPulled(ev trace.ArtifactPulled) { r.tw.Emit(ev) }

// A2ASend records one murmur:message/send.
func (r *Recorder) A2ASend(ev trace.A2ASend) { r.tw.Emit(ev) }

// CallDeadline records a component call stopped while waiting on the runtime.
func (r *Recorder) CallDeadline(component, call string, deadline time.Duration) {
	r.tw.Emit(trace.CallDeadline{Component: component, Call: call, DeadlineMS: deadline.Milliseconds()})
}

// Totals returns the tool calls and tool errors recorded so far.
func (r *Recorder) Totals() (calls, errors int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.toolCalls, r.toolErrors
}

// End writes session_end once and ends the session span; it reports whether
// this call was the one that ended the session (a SIGTERM and the run's own
// return may race). flush waits (bounded) for spans to reach the collector;
// the SIGTERM path passes false to exit at once.
func (r *Recorder) End(status, reason string, flush bool) bool {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return false
	}
	r.ended = true
	calls, errs := r.toolCalls, r.toolErrors
	r.mu.Unlock()
	end := time.Now()
	var rp *string
	if reason != "" {
		rp = &reason
	}
	r.tw.Emit(trace.SessionEnd{ExitStatus: status, Reason: rp, DurationMS: end.Sub(r.started).Milliseconds(),
		ToolCalls: calls, ToolErrors: errs})
	if flush {
		r.tel.End(status, reason, end)
	}
	return true
}
