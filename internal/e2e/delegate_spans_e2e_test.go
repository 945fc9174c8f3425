package e2e_test

import (
	"bytes"
	"net/http/httptest"
	"path/filepath"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestDelegationSpans: with observability.otel_endpoint on both sides, the
// parent's capsule.delegation span opens under its task's span and the
// child's capsule.task span lands under the delegation span, in the same
// trace (the child got the span's traceparent with its task).
func TestDelegationSpans(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	otel := "observability:\n  otel_endpoint: " + srv.URL + "\n"
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n"+otel, workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n"+otel, orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	if r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it"); r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	recv.Mu.Lock()
	spans := append([]*tracepb.Span(nil), recv.Spans...)
	recv.Mu.Unlock()
	attr := func(s *tracepb.Span, k string) string {
		for _, a := range s.Attributes {
			if a.Key == k {
				return a.Value.GetStringValue()
			}
		}
		return ""
	}
	var dlg *tracepb.Span
	var taskSpans []*tracepb.Span
	for _, s := range spans {
		switch s.Name {
		case "capsule.delegation":
			dlg = s
		case "capsule.task":
			taskSpans = append(taskSpans, s)
		}
	}
	if dlg == nil {
		t.Fatalf("no capsule.delegation span among %d spans", len(spans))
	}
	if attr(dlg, "capsule") != "worker" || attr(dlg, "outcome") != "ok" {
		t.Errorf("capsule.delegation attributes %v", dlg.Attributes)
	}
	var parentTask, childTask *tracepb.Span
	for _, s := range taskSpans {
		if bytes.Equal(s.SpanId, dlg.ParentSpanId) {
			parentTask = s
		}
		if bytes.Equal(s.ParentSpanId, dlg.SpanId) {
			childTask = s
		}
	}
	if parentTask == nil {
		t.Errorf("the delegation span is not under the parent's capsule.task span")
	}
	if childTask == nil {
		t.Fatalf("no capsule.task span under the delegation span (%d task spans)", len(taskSpans))
	}
	if !bytes.Equal(childTask.TraceId, dlg.TraceId) {
		t.Errorf("the child's task is in another trace")
	}
}
