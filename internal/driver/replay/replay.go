// Package replay is the built-in driver murmur/driver-replay: it answers each
// call with the next response of a transcript file instead of asking a model,
// for demos and tests that must run with no key and no network. Its model is
// "replay" and its usage is always zero; a call past the last response fails
// with a driver error of kind KindExhausted, which fails the task.
//
// The transcript (version 1) is YAML or JSON (JSON is YAML):
//
//	version: 1
//	responses:
//	  - chunks: ["Let me ", "echo that."]   # optional: the text as streamed
//	    content:
//	      - {type: text, text: "Let me echo that."}
//	      - {type: tool_call, id: call_1, name: murmur/echo, input: {message: hi}}
//	    stop_reason: tool_call              # optional: tool_call when the content has a tool call, else end_turn
//	  - content:
//	      - {type: text, text: "Done."}
//
// Each response is a normalized response (docs/drivers.md) without usage. When
// chunks is absent, each text block is streamed as one chunk; when present,
// the chunks must join to the response's text. docs/drivers.md is the
// reference.
package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
)

// Name is the built-in's artifact name.
const Name = "murmur/driver-replay"

// Model is the model a replay reports.
const Model = "replay"

// Version is the transcript format version this package reads.
const Version = 1

// Diagnostic codes of a transcript that cannot be used (docs/diagnostics.md).
const (
	CodeUnreadable = "E-RUN-085" // no config.transcript, or the file cannot be read
	CodeInvalid    = "E-RUN-086" // the file is not a version-1 transcript
)

// Response is one scripted answer of a transcript.
type Response struct {
	Chunks     []string       `json:"chunks,omitempty"`
	Content    []driver.Block `json:"content"`
	StopReason string         `json:"stop_reason,omitempty"`
}

// Transcript is a parsed transcript file.
type Transcript struct {
	Version   int        `json:"version"`
	Responses []Response `json:"responses"`
}

// Driver replays one transcript; the responses are consumed in order across
// every call of the session, whichever task makes it.
type Driver struct {
	info driver.Info
	path string

	mu        sync.Mutex
	responses []Response
	next      int
}

// New reads and validates the transcript at path (already resolved against the
// manifest's directory by the caller). A file that is missing, unreadable or
// not a valid transcript is a coded diagnostic naming the file.
func New(name, version, path string) (*Driver, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, diag.Wrap(err, CodeUnreadable, "%s: the transcript %s cannot be read", Name, path).
			WithHint("point the driver entry's config.transcript at a transcript file (relative to murmur.yaml)")
	}
	t, err := Parse(data)
	if err != nil {
		return nil, diag.Wrap(err, CodeInvalid, "%s: %s is not a version-%d transcript", Name, path, Version).
			WithHint("see docs/drivers.md for the transcript format")
	}
	sum := sha256.Sum256(data)
	return &Driver{
		info:      driver.Info{Name: name, Version: version, Implementation: driver.ImplementationBuiltin, SHA256: hex.EncodeToString(sum[:])},
		path:      path,
		responses: t.Responses,
	}, nil
}

// Parse reads a transcript (YAML or JSON) and checks it: version 1, at least
// one response, every block well formed, every tool call's input an object,
// chunks that join to the text, a stop reason that fits the content. Missing
// tool-call ids and stop reasons are filled in.
func Parse(data []byte) (*Transcript, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, fmt.Errorf("the file is empty")
	}
	// Through JSON, so the blocks decode with the protocol's own rules.
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("the file holds something JSON cannot carry: %w", err)
	}
	var t Transcript
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	if t.Version != Version {
		return nil, fmt.Errorf("version is %d; this runtime reads version %d", t.Version, Version)
	}
	if len(t.Responses) == 0 {
		return nil, fmt.Errorf("responses is empty")
	}
	for i := range t.Responses {
		if err := check(&t.Responses[i], i); err != nil {
			return nil, fmt.Errorf("responses[%d]: %w", i, err)
		}
	}
	return &t, nil
}

func check(r *Response, i int) error {
	calls := 0
	var text strings.Builder
	for j := range r.Content {
		b := &r.Content[j]
		switch b.Type {
		case driver.BlockText:
			text.WriteString(b.Text)
		case driver.BlockToolCall:
			calls++
			if len(bytes.TrimSpace(b.Input)) == 0 {
				b.Input = json.RawMessage("{}")
			}
			if t := bytes.TrimSpace(b.Input); t[0] != '{' {
				return fmt.Errorf("content[%d]: the input of tool call %s is %s, not an object", j, b.Name, t)
			}
			if b.ID == "" {
				b.ID = fmt.Sprintf("replay_%d_%d", i+1, j+1)
			}
		}
	}
	if r.Chunks != nil && strings.Join(r.Chunks, "") != text.String() {
		return fmt.Errorf("chunks join to %q, but the text is %q", strings.Join(r.Chunks, ""), text.String())
	}
	if r.StopReason == "" {
		r.StopReason = driver.StopEndTurn
		if calls > 0 {
			r.StopReason = driver.StopToolCall
		}
	}
	resp := driver.Response{StopReason: r.StopReason, Content: r.Content}
	return resp.Validate()
}

// Info names the driver; SHA256 is the transcript's digest.
func (d *Driver) Info() driver.Info { return d.info }

// Remaining reports how many responses are left.
func (d *Driver) Remaining() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.responses) - d.next
}

// Call answers with the next response, streaming its text to chunk. The
// request is not looked at. Past the last response it fails with
// KindExhausted.
func (d *Driver) Call(ctx context.Context, _ *driver.Request, chunk driver.ChunkFunc) (*driver.Response, error) {
	if ctx.Err() != nil {
		return nil, driver.Canceled(d.info.Name, ctx)
	}
	d.mu.Lock()
	if d.next >= len(d.responses) {
		n := len(d.responses)
		d.mu.Unlock()
		return nil, &driver.Error{Kind: driver.KindExhausted, Driver: d.info.Name,
			Message: fmt.Sprintf("the transcript %s is exhausted: all %d responses were used and the model was called again", d.path, n)}
	}
	r := d.responses[d.next]
	d.next++
	d.mu.Unlock()

	if chunk != nil {
		if r.Chunks != nil {
			for _, c := range r.Chunks {
				if c != "" {
					chunk(c)
				}
			}
		} else {
			for _, b := range r.Content {
				if b.Type == driver.BlockText && b.Text != "" {
					chunk(b.Text)
				}
			}
		}
	}
	return &driver.Response{
		StopReason: r.StopReason,
		Content:    append([]driver.Block(nil), r.Content...),
		Usage:      &driver.Usage{},
	}, nil
}
