package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Mapped is a tools/call result as the model sees it (docs/mcp.md "What
// the model sees").
type Mapped struct {
	// Text is the content blocks in order, joined by "\n".
	Text string
	// IsError is the result's isError.
	IsError bool
	// Hidden reports a block the model is not shown (an image, audio, a
	// blob, an unknown type): the whole result is kept beside the call.
	Hidden bool
	// InputRequired lists the input requests of an input_required result
	// (sampling, elicitation, roots): nil for a complete result.
	InputRequired []string
}

type wireBlock struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	URI      string          `json:"uri"`
	Name     string          `json:"name"`
	MIMEType string          `json:"mimeType"`
	Data     json.RawMessage `json:"data"`
	Resource *struct {
		URI      string          `json:"uri"`
		MIMEType string          `json:"mimeType"`
		Text     *string         `json:"text"`
		Blob     json.RawMessage `json:"blob"`
	} `json:"resource"`
}

// MapResult maps a raw CallToolResult to the model's text. keptAt is where
// the whole result is kept when a block is not shown. A result that is not
// a JSON object is an error.
func MapResult(raw json.RawMessage, keptAt string) (Mapped, error) {
	var r struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		ResultType        string            `json:"resultType"`
		InputRequests     map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return Mapped{}, fmt.Errorf("the result is not a JSON object")
	}
	if err := json.Unmarshal(t, &r); err != nil {
		return Mapped{}, fmt.Errorf("the result cannot be read: %v", err)
	}
	var m Mapped
	m.IsError = r.IsError
	if r.ResultType == "input_required" {
		m.InputRequired = []string{}
		for k, v := range r.InputRequests {
			meth := v.Method
			if meth == "" {
				meth = k
			}
			m.InputRequired = append(m.InputRequired, clipMethod(meth))
		}
		return m, nil
	}
	var parts []string
	hasText := false
	for _, c := range r.Content {
		var b wireBlock
		if json.Unmarshal(c, &b) != nil {
			b = wireBlock{Type: "unknown"}
		}
		switch {
		case b.Type == "text" && b.Text != nil:
			parts = append(parts, *b.Text)
			hasText = true
		case b.Type == "resource" && b.Resource != nil && b.Resource.Text != nil:
			parts = append(parts, fmt.Sprintf("[resource %s %s]\n%s", b.Resource.URI, b.Resource.MIMEType, *b.Resource.Text))
			hasText = true
		case b.Type == "resource_link":
			parts = append(parts, fmt.Sprintf("[resource link %s %q %s]", b.URI, b.Name, b.MIMEType))
		default:
			mime, n := b.MIMEType, dataBytes(b.Data)
			if b.Type == "resource" && b.Resource != nil {
				mime, n = b.Resource.MIMEType, dataBytes(b.Resource.Blob)
			}
			typ := b.Type
			if typ == "" {
				typ = "unknown"
			}
			parts = append(parts, fmt.Sprintf("[%s %s, %d bytes: not shown; the whole result is in %s]", clipMethod(typ), clipMethod(mime), n, keptAt))
			m.Hidden = true
		}
	}
	if !hasText && len(bytes.TrimSpace(r.StructuredContent)) > 0 && string(bytes.TrimSpace(r.StructuredContent)) != "null" {
		var buf bytes.Buffer
		if json.Compact(&buf, r.StructuredContent) == nil {
			parts = append(parts, buf.String())
		}
	}
	m.Text = strings.Join(parts, "\n")
	if m.Text == "" {
		m.Text = "(no output)"
	}
	return m, nil
}

// dataBytes is the decoded size of a base64 string (its length when it is
// not base64).
func dataBytes(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	if n, err := base64.StdEncoding.DecodeString(s); err == nil {
		return len(n)
	}
	return len(s)
}
