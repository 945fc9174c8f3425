package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMapResult(t *testing.T) {
	const kept = "/r/logs/tools/c1.mcp.json"
	for _, tc := range []struct {
		name, raw, text string
		isErr, hidden   bool
		input           []string
	}{
		{"text", `{"content":[{"type":"text","text":"hi"}]}`, "hi", false, false, nil},
		{"two texts", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "a\nb", false, false, nil},
		{"error", `{"content":[{"type":"text","text":"bad"}],"isError":true}`, "bad", true, false, nil},
		{"nothing", `{"content":[]}`, "(no output)", false, false, nil},
		{"embedded text", `{"content":[{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"body"}}]}`, "[resource file:///a text/plain]\nbody", false, false, nil},
		{"link", `{"content":[{"type":"resource_link","uri":"file:///b","name":"b","mimeType":"text/x"}]}`, `[resource link file:///b "b" text/x]`, false, false, nil},
		{"image", `{"content":[{"type":"text","text":"t"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, "t\n[image image/png, 3 bytes: not shown; the whole result is in " + kept + "]", false, true, nil},
		{"blob", `{"content":[{"type":"resource","resource":{"uri":"x","mimeType":"a/b","blob":"AAAA"}}]}`, "[resource a/b, 3 bytes: not shown; the whole result is in " + kept + "]", false, true, nil},
		{"unknown", `{"content":[{"type":"hologram"}]}`, "[hologram , 0 bytes: not shown; the whole result is in " + kept + "]", false, true, nil},
		{"structured only", `{"content":[],"structuredContent":{"b": 1, "a": [1, 2]}}`, `{"b":1,"a":[1,2]}`, false, false, nil},
		{"structured with text", `{"content":[{"type":"text","text":"t"}],"structuredContent":{"a":1}}`, "t", false, false, nil},
		{"input required", `{"resultType":"input_required","inputRequests":{"r1":{"method":"sampling/createMessage"}}}`, "", false, false, []string{"sampling/createMessage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := MapResult(json.RawMessage(tc.raw), kept)
			if err != nil {
				t.Fatal(err)
			}
			if m.Text != tc.text && tc.input == nil || m.IsError != tc.isErr || m.Hidden != tc.hidden || strings.Join(m.InputRequired, ",") != strings.Join(tc.input, ",") {
				t.Fatalf("got %+v", m)
			}
		})
	}
	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{"content":5}`} {
		if _, err := MapResult(json.RawMessage(bad), kept); err == nil {
			t.Errorf("%q mapped", bad)
		}
	}
}

// FuzzMapResult: any bytes map to an error or to text that is valid where
// the server's strings were, never a panic; a result that maps is never
// empty text.
func FuzzMapResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":true}`,
		`{"content":[{"type":"resource","resource":{"uri":"x","text":"t"}}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"resource_link","uri":"u","name":"n"}]}`,
		`{"resultType":"input_required","inputRequests":{"a":{}}}`,
		`{"content":[null,1,"x",{"type":null}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := MapResult(raw, "/k")
		if err != nil {
			return
		}
		if m.InputRequired == nil && m.Text == "" {
			t.Fatalf("empty text for %q", raw)
		}
		if utf8.Valid(raw) && !utf8.ValidString(m.Text) && !strings.Contains(string(raw), `\u`) {
			t.Fatalf("invalid UTF-8 from valid input %q", raw)
		}
	})
}
