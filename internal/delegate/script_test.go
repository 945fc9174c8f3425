package delegate

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// TestScriptCompletionListener: a script parent's listener answers the
// completion path as a door does — -31001 for another session, -31002 for a
// delegation nobody waits for — refuses everything else, and is gone once
// the runtime is closed.
func TestScriptCompletionListener(t *testing.T) {
	sid := ids.New(ids.Session)
	r, err := NewScript(Config{SessionID: sid, RoostURL: "http://127.0.0.1:1", RecordsDir: t.TempDir(), RuntimeDir: t.TempDir(),
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	post := func(origin, session, dlg string) (code int, msg, reason string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, r.cfg.DoorURL+"/", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"{}"}]}}}`))
		req.Header.Set("A2A-Version", "1.0")
		if origin != "" {
			req.Header.Set("x-murmur-task-origin", origin)
		}
		req.Header.Set("x-murmur-completion-session", session)
		req.Header.Set("x-murmur-delegation-id", dlg)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    []struct {
					Reason string `json:"reason"`
					Domain string `json:"domain"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
		if len(out.Error.Data) > 0 {
			reason = out.Error.Data[0].Reason + "@" + out.Error.Data[0].Domain
		}
		return out.Error.Code, out.Error.Message, reason
	}
	for _, c := range []struct {
		name, origin, session, dlg string
		code                       int
		reason, msg                string
	}{
		{"another session", "completion", ids.New(ids.Session), "dlg_x", -31001, "COMPLETION_MISADDRESSED@murmur.nexus", "which is not the session running here"},
		{"not awaited", "completion", sid, ids.New(ids.Delegation), -31002, "COMPLETION_NOT_AWAITED@murmur.nexus", "no task in this session is waiting for delegation dlg_"},
		{"no delegation id", "completion", sid, "", -31002, "COMPLETION_NOT_AWAITED@murmur.nexus", "names no delegation"},
		{"a user message", "", sid, "", -32601, "", "answers only x-murmur-task-origin: completion"},
		{"a delegated task", "delegation", sid, "", -32601, "", "completion listener"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg, reason := post(c.origin, c.session, c.dlg)
			if code != c.code || (c.reason != "" && reason != c.reason) || !strings.Contains(msg, c.msg) {
				t.Errorf("got %d %q %q", code, msg, reason)
			}
		})
	}
	url := r.cfg.DoorURL
	r.Close(roostapi.StatusComplete) // deregistering fails (no daemon): best effort, logged
	if _, err := http.Post(url+"/", "application/json", strings.NewReader("{}")); err == nil {
		t.Errorf("the completion listener still answers after Close")
	}
}
