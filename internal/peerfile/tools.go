package peerfile

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
)

// The runtime tools' names.
const (
	ShareToolName = "share-file"
	FetchToolName = "fetch-peer-file"
)

// ShareTool is share-file as an inventory entry (tools.KindRuntime): an
// agent whose manifest declares exports.peer_files has it.
type ShareTool struct{ Plane *Plane }

func (t *ShareTool) Name() string { return ShareToolName }
func (t *ShareTool) Kind() string { return tools.KindRuntime }
func (t *ShareTool) Description() string {
	return "Share one file of your shared folder (" + t.Plane.Grant.Root + "/ in your work folder) with another capsule: returns a handle it can redeem with fetch-peer-file until the handle expires or this session ends. The path is relative to that folder."
}
func (t *ShareTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"The file, relative to the shared folder."},"ttl":{"type":"string","description":"How long the handle lives: a duration such as 5m, or whole seconds; at most the capsule's max_ttl, which is also the default."}},"required":["path"],"additionalProperties":false}`)
}

func (t *ShareTool) Call(_ context.Context, c *tools.Call) tools.Outcome {
	if c.Task == nil {
		return tools.Outcome{Err: errors.New("share-file is an agent loop tool; a script cannot invoke it")}
	}
	var in struct {
		Path string `json:"path"`
		TTL  string `json:"ttl"`
	}
	data := ""
	if c.Input.Data != nil {
		data = *c.Input.Data
	}
	line := trace.PeerHandleMint{TaskID: c.Task.TaskID, ToolCallID: c.Task.ID}
	var res Shared
	var ref *Refusal
	if err := json.Unmarshal([]byte(data), &in); err != nil {
		ref = &Refusal{Status: 400, Word: "bad_input", Message: "share-file takes {\"path\": string, \"ttl\"?: string}: " + err.Error()}
	} else {
		line.Path = in.Path
		res, ref = t.Plane.Share(in.Path, in.TTL)
	}
	if ref != nil {
		line.Outcome, line.Reason = ref.Word, &ref.Message
	} else {
		line.HandleID, line.Bytes, line.ExpiresAtMS, line.Outcome = &res.HandleID, res.Bytes, res.ExpiresAtMS, "ok"
	}
	c.Task.Lines.EmitUnder(c.Task.ParentID, line)
	if ref != nil {
		return tools.Outcome{Err: errors.New(ref.Message), Verbatim: true}
	}
	b, _ := json.Marshal(res)
	return tools.Outcome{Text: string(b)}
}

// FetchTool is fetch-peer-file as an inventory entry: an agent whose
// capabilities.peer_fetch.allow is not empty has it.
type FetchTool struct {
	Fetcher *Fetcher
	// Deadline is the call's deadline (capabilities.limits.deadline_seconds).
	Deadline time.Duration
}

func (t *FetchTool) Name() string { return FetchToolName }
func (t *FetchTool) Kind() string { return tools.KindRuntime }
func (t *FetchTool) Description() string {
	return "Fetch a file another capsule shared with share-file, by its handle: the file lands read-only in peer-in/ of your work folder, and the result names it (the bytes never come back inline)."
}
func (t *FetchTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"handle":{"type":"string","description":"The mh1. handle share-file returned."}},"required":["handle"],"additionalProperties":false}`)
}

func (t *FetchTool) Call(ctx context.Context, c *tools.Call) tools.Outcome {
	if c.Task == nil {
		return tools.Outcome{Err: errors.New("fetch-peer-file is an agent loop tool; a script cannot invoke it")}
	}
	var in struct {
		Handle string `json:"handle"`
	}
	if c.Input.Data != nil {
		json.Unmarshal([]byte(*c.Input.Data), &in)
	}
	if t.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Deadline)
		defer cancel()
	}
	res, id, from, ferr := t.Fetcher.Fetch(ctx, in.Handle)
	line := trace.PeerFileFetch{TaskID: c.Task.TaskID, ToolCallID: c.Task.ID, From: from, HandleID: id}
	if ferr != nil {
		line.Outcome, line.Reason = ferr.Outcome, &ferr.Message
		if ferr.PeerError != "" {
			line.PeerError = &ferr.PeerError
		}
	} else {
		line.Path, line.Bytes, line.SHA256, line.Outcome = &res.Path, res.Bytes, res.SHA256, "ok"
	}
	c.Task.Lines.EmitUnder(c.Task.ParentID, line)
	if ferr != nil {
		return tools.Outcome{Err: errors.New(ferr.Message), Verbatim: true}
	}
	b, _ := json.Marshal(res)
	return tools.Outcome{Text: string(b)}
}
