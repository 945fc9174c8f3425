package delegate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/store"
)

// Completion statuses (the completion's status, and the delegation line's
// outcome for a delegation that started).
const (
	StatusOK         = "ok"
	StatusError      = "error"
	StatusCrashed    = "crashed"
	StatusTerminated = "terminated"
)

// CompletionFile is the record's name in the child's records dir.
const CompletionFile = "completion.json"

// Record is completion.json: the completion's fields and the three that
// describe its delivery.
type Record struct {
	DelegationID   string `json:"delegation_id"`
	CapsuleName    string `json:"capsule_name"` // the full name
	CapsuleVersion string `json:"capsule_version"`
	SessionID      string `json:"session_id"`
	Status         string `json:"status"`
	ResultPath     string `json:"result_path,omitempty"`
	Workdir        string `json:"workdir"`
	DurationMS     int64  `json:"duration_ms"`
	Detail         string `json:"detail,omitempty"`

	ReportedBy    string `json:"reported_by"` // child | launcher
	Delivered     bool   `json:"delivered"`
	DeliveryError string `json:"delivery_error,omitempty"`
}

// message is the completion's fields, the SendMessage text.
func (r Record) message() []byte {
	// The delivery fields stay out: they describe the sending, not the completion.
	m := r
	b, _ := json.Marshal(struct {
		DelegationID   string `json:"delegation_id"`
		CapsuleName    string `json:"capsule_name"`
		CapsuleVersion string `json:"capsule_version"`
		SessionID      string `json:"session_id"`
		Status         string `json:"status"`
		ResultPath     string `json:"result_path,omitempty"`
		Workdir        string `json:"workdir"`
		DurationMS     int64  `json:"duration_ms"`
		Detail         string `json:"detail,omitempty"`
	}{m.DelegationID, m.CapsuleName, m.CapsuleVersion, m.SessionID, m.Status, m.ResultPath, m.Workdir, m.DurationMS, m.Detail})
	return b
}

// WriteRecord writes completion.json atomically (0600).
func WriteRecord(recordsDir string, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := store.WriteFileAtomic(filepath.Join(recordsDir, CompletionFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", CompletionFile, err)
	}
	return nil
}

// ReadRecord reads completion.json; an absent file is os.ErrNotExist.
func ReadRecord(recordsDir string) (Record, error) {
	var r Record
	p := filepath.Join(recordsDir, CompletionFile)
	st, err := os.Lstat(p)
	if err != nil {
		return r, err
	}
	if !st.Mode().IsRegular() || st.Size() > 1<<20 {
		return r, fmt.Errorf("%s is not a regular file of at most 1 MiB", p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s does not decode: %w", p, err)
	}
	return r, nil
}

// Report is the child's side of the completion path: it writes
// completion.json (reported_by: child), posts the completion to the
// parent's door, and rewrites the file with what the posting did, retrying
// once after retryAfter. A failed delivery is one line on stderr; it never
// fails the child's session.
func Report(sp *Spawner, recordsDir string, r Record, stderr io.Writer, log *slog.Logger) Record {
	r.DelegationID, r.ReportedBy, r.Delivered, r.DeliveryError = sp.DelegationID, "child", false, ""
	if err := WriteRecord(recordsDir, r); err != nil {
		log.Warn("the completion record could not be written", "error", err)
	}
	err := Post(context.Background(), sp, r)
	// The one retry is for a completion that did not reach a door. A door's
	// JSON-RPC error is its answer (asking again gets the same one), and a
	// parent whose lifeline ended is gone: waiting a second for either only
	// holds up the child's exit, and with it every level above it in a
	// chain that is ending.
	var answered *answerError
	if err != nil && !errors.As(err, &answered) && !spawnerGone.Load() {
		time.Sleep(retryAfter)
		err = Post(context.Background(), sp, r)
	}
	if err != nil {
		r.DeliveryError = err.Error()
		fmt.Fprintf(stderr, "the completion of %s could not be delivered to %s: %s\n", sp.DelegationID, sp.URL, r.DeliveryError)
	} else {
		r.Delivered = true
	}
	if werr := WriteRecord(recordsDir, r); werr != nil {
		log.Warn("the completion record could not be rewritten", "error", werr)
	}
	return r
}

// retryAfter is the pause before the one retry of a completion.
var retryAfter = time.Second

// Post sends one completion SendMessage with its four headers. An error
// answer is returned as its message (the child's delivery_error).
func Post(ctx context.Context, sp *Spawner, r Record) error {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
		"params": map[string]any{"message": map[string]any{
			"messageId": ids.New(ids.Event), "role": "ROLE_USER", "contextId": sp.ContextID,
			"parts": []map[string]any{{"text": string(r.message())}},
		}},
	})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sp.URL+"/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("x-murmur-task-origin", "completion")
	req.Header.Set("x-murmur-delegation-id", sp.DelegationID)
	req.Header.Set("x-murmur-completion-session", sp.SessionID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("the parent's door answered HTTP %d with no JSON-RPC body", resp.StatusCode)
	}
	if out.Error != nil {
		return &answerError{out.Error.Message}
	}
	return nil
}

// answerError is the door's JSON-RPC error answer to a completion; its
// text is the answer's message (the child's delivery_error).
type answerError struct{ msg string }

func (e *answerError) Error() string { return e.msg }

// spawnerGone is set once this process's spawner lifeline has read EOF:
// the process that launched it has ended.
var spawnerGone atomic.Bool
