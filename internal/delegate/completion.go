package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/store"
)

// Completion statuses (the completion's status, and the delegation line's
// outcome for a delegation that started).
const (
	StatusOK         = doorapi.StatusOK
	StatusError      = doorapi.StatusError
	StatusCrashed    = doorapi.StatusCrashed
	StatusTerminated = doorapi.StatusTerminated
)

// CompletionFile is the record's name in the child's records dir.
const CompletionFile = "completion.json"

// Completion is what a child reports (doorapi.Completion).
type Completion = doorapi.Completion

// Record is completion.json (doorapi.CompletionRecord).
type Record = doorapi.CompletionRecord

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
func Report(sp *Spawner, recordsDir string, c Completion, stderr io.Writer, log *slog.Logger) Record {
	c.DelegationID = sp.DelegationID
	r := Record{Completion: c, ReportedBy: "child"}
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

// Post sends one completion to the parent's door. A JSON-RPC error answer
// is returned as an *answerError carrying its message (the child's
// delivery_error).
func Post(ctx context.Context, sp *Spawner, r Record) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := doorapi.NewClient(doorapi.Endpoint(sp.URL), nil).PostCompletion(ctx,
		doorapi.Addressee{SessionID: sp.SessionID, ContextID: sp.ContextID, DelegationID: sp.DelegationID},
		ids.New(ids.Event), r.Completion)
	var answer *doorapi.Error
	var bad *doorapi.BadAnswerError
	switch {
	case errors.As(err, &answer):
		return &answerError{answer.Message}
	case errors.As(err, &bad):
		return fmt.Errorf("the parent's door answered HTTP %d with no JSON-RPC body", bad.StatusCode)
	}
	return err
}

// answerError is the door's JSON-RPC error answer to a completion; its
// text is the answer's message (the child's delivery_error).
type answerError struct{ msg string }

func (e *answerError) Error() string { return e.msg }

// spawnerGone is set once this process's spawner lifeline has read EOF:
// the process that launched it has ended.
var spawnerGone atomic.Bool
