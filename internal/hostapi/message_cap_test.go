package hostapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// hugePeer answers every JSON-RPC request with a well-formed start of a task
// whose id never ends: size bytes of "a" follow, streamed, so the peer itself
// holds no copy.
func hugePeer(t *testing.T, size int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		io.WriteString(bw, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"task":{"id":"`)
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 'a'
		}
		for n := int64(0); n < size; n += int64(len(chunk)) {
			if _, err := bw.Write(chunk); err != nil {
				return // the client stopped reading
			}
		}
		io.WriteString(bw, `","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`)
		bw.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSendResponseCapped: a peer answering far more than the cap ends the
// call with an error naming the cap, without the host holding the answer.
func TestSendResponseCapped(t *testing.T) {
	srv := hugePeer(t, 8*MaxResponseBytes)
	e := newEnv(t, msgManifest(srv.URL), nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := e.api.Send(context.Background(), srv.URL, wit.Message{Text: "x"})
	runtime.ReadMemStats(&after)
	wantErr(t, err, "E-RUN-072", "16 MiB")
	// TotalAlloc counts every byte allocated during the call: reading up to
	// the cap into a growing buffer costs about 4 caps; reading the 128 MiB
	// answer whole would cost over 16.
	if got := after.TotalAlloc - before.TotalAlloc; got > 6*MaxResponseBytes {
		t.Errorf("the call allocated %d bytes for a capped answer", got)
	}
	if n := len(e.lines(t, trace.TypeA2ASend)); n != 0 {
		t.Fatalf("a refused answer left %d a2a_send lines", n)
	}
	t.Logf("allocated during the call: %d bytes", after.TotalAlloc-before.TotalAlloc)
}

// TestSendResponseUnderCap: an answer just under the cap is still read.
func TestSendResponseUnderCap(t *testing.T) {
	srv := hugePeer(t, MaxResponseBytes-(1<<20))
	e := newEnv(t, msgManifest(srv.URL), nil)
	tr, err := e.api.Send(context.Background(), srv.URL, wit.Message{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "TASK_STATE_COMPLETED" || len(tr.TaskID) < 10<<20 {
		t.Fatalf("got state %q, task id of %d bytes", tr.State, len(tr.TaskID))
	}
}
