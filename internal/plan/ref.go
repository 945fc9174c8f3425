package plan

import (
	"bytes"
	"encoding/json"
	"strings"
)

// References in a step's input: every $<step>.output or $<step>.status in a
// JSON string value, at any depth, that is not followed by an id character.
// Object keys are never touched, nor a capsule step's version.

// scanRefs calls fn for each reference in s: its byte span and what it names.
func scanRefs(s string, fn func(start, end int, r Ref)) {
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(s) && idChar(s[j]) {
			j++
		}
		if j == i+1 || j-i-1 > 64 || j >= len(s) || s[j] != '.' {
			continue
		}
		for _, f := range []string{"output", "status"} {
			end := j + 1 + len(f)
			if strings.HasPrefix(s[j+1:], f) && (end == len(s) || !idChar(s[end])) {
				fn(i, end, Ref{Step: s[i+1 : j], Field: f})
				i = end - 1
				break
			}
		}
	}
}

// inputRefs lists the references in a step's input.
func inputRefs(input json.RawMessage, kind string) []Ref {
	v, err := decode(input)
	if err != nil {
		return nil
	}
	var out []Ref
	walkStrings(v, kind, func(s string) string {
		scanRefs(s, func(_, _ int, r Ref) { out = append(out, r) })
		return s
	})
	return out
}

func decode(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// walkStrings replaces each string value of v by fn's answer; the top-level
// "version" of a capsule step's input is left alone.
func walkStrings(v any, kind string, fn func(string) string) any {
	var walk func(v any, top bool) any
	walk = func(v any, top bool) any {
		switch x := v.(type) {
		case string:
			return fn(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i], false)
			}
		case map[string]any:
			for k := range x {
				if top && kind == KindCapsule && k == "version" {
					continue
				}
				x[k] = walk(x[k], false)
			}
		}
		return v
	}
	return walk(v, true)
}

// substitute replaces the references in a step's input. value answers a
// reference, or false for an output with no value: the first such is
// returned as missing.
func substitute(input json.RawMessage, kind string, value func(Ref) (string, bool)) (json.RawMessage, *Ref, error) {
	v, err := decode(input)
	if err != nil {
		return nil, nil, err
	}
	var missing *Ref
	v = walkStrings(v, kind, func(s string) string {
		var b strings.Builder
		last := 0
		scanRefs(s, func(start, end int, r Ref) {
			val, ok := value(r)
			if !ok && missing == nil {
				rr := r
				missing = &rr
			}
			b.WriteString(s[last:start])
			b.WriteString(val)
			last = end
		})
		if last == 0 {
			return s
		}
		b.WriteString(s[last:])
		return b.String()
	})
	if missing != nil {
		return nil, missing, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil, nil
}
