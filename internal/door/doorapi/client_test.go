package doorapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// handler answers completions the way the delegation runtime does: its own
// session only, delegation dlg_1 only.
type handler struct{ got *door.Completion }

func (h *handler) HandleCompletion(_ context.Context, c *door.Completion) (any, error) {
	h.got = c
	if c.Session != "ses_1" {
		return nil, door.Misaddressed(c.Session, "ses_1")
	}
	if c.DelegationID != "dlg_1" {
		return nil, &door.RPCError{Code: doorapi.CodeCompletionNotAwaited, Message: "not awaited"}
	}
	return doorapi.CompletionReceipt{DelegationID: c.DelegationID, Received: true}, nil
}

// PostCompletion speaks the door's completion path: the headers it is
// classified by, the completion as the message text, and the two codes as
// typed errors.
func TestPostCompletionAgainstTheDoor(t *testing.T) {
	h := &handler{}
	srv := httptest.NewServer(door.CompletionsOnly(h))
	defer srv.Close()
	c := doorapi.NewClient(doorapi.Endpoint(srv.URL), nil)
	comp := doorapi.Completion{DelegationID: "dlg_1", CapsuleName: "local/w", Status: doorapi.StatusOK}

	rc, err := c.PostCompletion(context.Background(), doorapi.Addressee{SessionID: "ses_1", ContextID: "ctx_1", DelegationID: "dlg_1"}, "msg_1", comp)
	if err != nil || !rc.Received || rc.DelegationID != "dlg_1" {
		t.Fatalf("receipt %+v, %v", rc, err)
	}
	var params struct {
		Message struct {
			ContextID string `json:"contextId"`
			Parts     []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	}
	if err := json.Unmarshal(h.got.Params, &params); err != nil || len(params.Message.Parts) != 1 || params.Message.ContextID != "ctx_1" {
		t.Fatalf("params %s: %v", h.got.Params, err)
	}
	var sent doorapi.Completion
	if err := json.Unmarshal([]byte(params.Message.Parts[0].Text), &sent); err != nil || sent != comp {
		t.Errorf("completion text %q: %v", params.Message.Parts[0].Text, err)
	}

	_, err = c.PostCompletion(context.Background(), doorapi.Addressee{SessionID: "ses_2", DelegationID: "dlg_1"}, "msg_2", comp)
	if !errors.Is(err, doorapi.ErrCompletionMisaddressed) || errors.Is(err, doorapi.ErrCompletionNotAwaited) {
		t.Errorf("misaddressed: %v", err)
	}
	_, err = c.PostCompletion(context.Background(), doorapi.Addressee{SessionID: "ses_1", DelegationID: "dlg_2"}, "msg_3", comp)
	if !errors.Is(err, doorapi.ErrCompletionNotAwaited) {
		t.Errorf("not awaited: %v", err)
	}
	if code, ok := doorapi.CodeOf(err); !ok || code != doorapi.CodeCompletionNotAwaited {
		t.Errorf("CodeOf = %d, %v", code, ok)
	}
}

// Something that is not a door answers no JSON-RPC: a *BadAnswerError.
func TestStopSessionNotADoor(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := doorapi.NewClient(doorapi.Endpoint(srv.URL), nil).StopSession(context.Background())
	var bad *doorapi.BadAnswerError
	if !errors.As(err, &bad) || bad.StatusCode != http.StatusNotFound {
		t.Errorf("StopSession: %v", err)
	}
	if _, ok := doorapi.CodeOf(err); ok {
		t.Errorf("CodeOf(%v) reads an answer", err)
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:41234":         "http://127.0.0.1:41234/",
		"http://127.0.0.1:41234":  "http://127.0.0.1:41234/",
		"http://127.0.0.1:41234/": "http://127.0.0.1:41234/",
	} {
		if got := doorapi.Endpoint(in); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}
