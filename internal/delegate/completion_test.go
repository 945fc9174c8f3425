package delegate

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Report retries once only a completion that reached no door: a door's
// JSON-RPC error is final, and so is a parent whose lifeline has ended.
func TestReportRetriesOnlyAnUnansweredCompletion(t *testing.T) {
	defer func(d time.Duration) { retryAfter = d }(retryAfter)
	retryAfter = time.Millisecond
	for _, c := range []struct {
		name      string
		body      string
		gone      bool
		posts     int32
		delivered bool
		errText   string
	}{
		{name: "answered", body: `{"jsonrpc":"2.0","id":1,"result":{"delegation_id":"dlg_1","received":true}}`, posts: 1, delivered: true},
		{name: "refused", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-31002,"message":"no task in this session is waiting for delegation dlg_1"}}`,
			posts: 1, errText: "no task in this session is waiting for delegation dlg_1"},
		{name: "not a door", body: `<html>`, posts: 2, errText: "the parent's door answered HTTP 200 with no JSON-RPC body"},
		{name: "not a door, parent gone", body: `<html>`, gone: true, posts: 1, errText: "the parent's door answered HTTP 200 with no JSON-RPC body"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				if r.Header.Get("x-murmur-task-origin") != "completion" || r.Header.Get("x-murmur-delegation-id") != "dlg_1" ||
					r.Header.Get("x-murmur-completion-session") != "ses_1" || r.Header.Get("A2A-Version") != "1.0" {
					t.Errorf("headers %v", r.Header)
				}
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			spawnerGone.Store(c.gone)
			defer spawnerGone.Store(false)
			dir := t.TempDir()
			var stderr strings.Builder
			got := Report(&Spawner{URL: srv.URL, SessionID: "ses_1", ContextID: "ctx", DelegationID: "dlg_1"}, dir,
				Completion{Status: StatusOK}, &stderr, slog.New(slog.DiscardHandler))
			if posts.Load() != c.posts || got.Delivered != c.delivered || got.DeliveryError != c.errText {
				t.Errorf("posts %d, record %+v", posts.Load(), got)
			}
			onDisk, err := ReadRecord(dir)
			if err != nil || onDisk != got || onDisk.ReportedBy != "child" {
				t.Errorf("completion.json %+v %v", onDisk, err)
			}
			if (c.errText != "") != strings.Contains(stderr.String(), "could not be delivered") {
				t.Errorf("stderr %q", stderr.String())
			}
		})
	}
}
