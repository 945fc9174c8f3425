package roost

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// oddStrings are strings the fast path must hand to encoding/json, next to
// plain ones it writes itself.
var oddStrings = []string{"", "ses_1", "é—ü", "\u2029", "\xe2\x80", "a b", `q"uote`, `back\slash`, "tab\t", "<html>&", "é", "\u2028", "\x7f", "\xff", "ctl\x01", "x/y@1.0.0"}

func randString(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(12))
	for i := range b {
		b[i] = byte(rng.IntN(0x90))
	}
	return string(b)
}

// Every value the fast encoders take is written to the bytes encoding/json
// writes, whether they handle it or hand it back.
func TestFastEncodersMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	strs := append([]string(nil), oddStrings...)
	for range 500 {
		strs = append(strs, randString(rng))
	}
	for i, s := range strs {
		o := strs[(i*7+3)%len(strs)]
		cp := credentialPayload{V: 1, S: s}
		ap := approvalPayload{V: 1, S: s, Name: o, Version: "0.1.0", SHA256: s + o, Depth: i % 5, Expires: int64(i) * 1e9, Nonce: o}
		for _, c := range []struct {
			what string
			v    any
			fast func() ([]byte, bool)
			html bool
		}{
			{"credential", cp, func() ([]byte, bool) { return appendCredentialPayload(nil, cp) }, true},
			{"approval", ap, func() ([]byte, bool) { return appendApprovalPayload(nil, ap) }, true},
			{"status", roostapi.StatusResponse{Status: s, DepthRemaining: -i, LiveChildren: i, LiveCapsules: 3}, nil, false},
			{"spawn", roostapi.SpawnResponse{Approval: s, Name: o, Version: s, SHA256: o, ExpiresAtMS: int64(i)}, nil, false},
			{"register", roostapi.RegisterResponse{Credential: s}, nil, false},
			{"empty", struct{}{}, nil, false},
			{"error", roostapi.ErrorResponse{Error: s + " — " + o}, func() ([]byte, bool) { return appendError(nil, s+" — "+o) }, false},
		} {
			var want []byte
			if c.html {
				want, _ = json.Marshal(c.v)
			} else {
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				enc.Encode(c.v)
				want = bytes.TrimRight(buf.Bytes(), "\n")
				if c.what == "error" { // writeError's spelling: a space after the colon
					want = bytes.Replace(want, []byte(`{"error":`), []byte(`{"error": `), 1)
				}
			}
			fast := c.fast
			if fast == nil {
				fast = func() ([]byte, bool) { return appendAnswer(nil, c.v) }
			}
			if got, ok := fast(); ok && !bytes.Equal(got, want) {
				t.Fatalf("%s of %q: fast %s, encoding/json %s", c.what, s, got, want)
			}
			// The payload readers take back exactly what was written.
			switch v := c.v.(type) {
			case credentialPayload:
				var p credentialPayload
				if parseCredentialPayload(want, &p) && p != v {
					t.Fatalf("credential %s read back as %+v", want, p)
				}
			case approvalPayload:
				var p approvalPayload
				if parseApprovalPayload(want, &p) && p != v {
					t.Fatalf("approval %s read back as %+v", want, p)
				}
			}
		}
	}
	if _, ok := appendCredentialPayload(nil, credentialPayload{V: 1, S: "ses_plain"}); !ok {
		t.Fatal("a plain session id took the slow path")
	}
}

// parseFlatBody either fills the fields as map decoding would, or declines.
func TestParseFlatBodyMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{}`, ` { } `, `{"name":"a/b","version":"1"}`, "{\n\t\"name\" : \"a/b\" ,\r\n \"version\":\"1\"}\n",
		`{"name":"x","name":"y"}`, `{"NAME":"x"}`, `{"name":null}`, `{"name":1}`, `{"name":"a\"b"}`,
		`{"name":"é"}`, `{"name":"a",}`, `{"name":"a"`, `{"name":"a"}x`, `{"name":"a"}{}`, `[]`, `{"a":{"b":"c"}}`,
		`{"session_id":"s","name":"n","version":"v","extra":"e"}`, `{"name" "a"}`, `{,}`, `{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"}`,
	}
	for _, b := range bodies {
		var fn, fv string
		fields := map[string]*string{"name": &fn, "version": &fv}
		if !parseFlatBody([]byte(b), fields) {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(b), &obj); err != nil {
			t.Fatalf("%q: fast path accepted a body encoding/json refuses: %v", b, err)
		}
		var wn, wv string
		if raw, ok := obj["name"]; ok {
			if json.Unmarshal(raw, &wn) != nil {
				t.Fatalf("%q: fast path accepted a non-string name", b)
			}
		}
		if raw, ok := obj["version"]; ok {
			json.Unmarshal(raw, &wv)
		}
		if fn != wn || fv != wv {
			t.Fatalf("%q: fast %q %q, encoding/json %q %q", b, fn, fv, wn, wv)
		}
	}
	var n string
	if !parseFlatBody([]byte(`{"name": "local/worker-a", "version": "0.1.0"}`), map[string]*string{"name": &n}) || n != "local/worker-a" {
		t.Fatal("the plain body took the slow path")
	}
}

func FuzzParseFlatBody(f *testing.F) {
	f.Add([]byte(`{"name":"a/b","version":"1"}`))
	f.Add([]byte(`{"name":"x","name":"y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fn string
		if !parseFlatBody(b, map[string]*string{"name": &fn}) {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", err)
		}
		var wn string
		if raw, ok := obj["name"]; ok && json.Unmarshal(raw, &wn) != nil {
			t.Fatal("accepted a non-string name")
		}
		if fn != wn {
			t.Fatalf("fast %q, encoding/json %q", fn, wn)
		}
	})
}
