package roost

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzTarget is an in-process daemon with one running top-level session
// (ses_fuzz, spawn.allow [worker-a, worker-b, wide, self]), a valid
// credential for it and a valid approval it was granted.
type fuzzTarget struct {
	srv      *Server
	cred     string
	approval string
}

func newFuzzTarget(t testing.TB) *fuzzTarget {
	fx := newFixture(t)
	srv, _, err := New(Options{MaxDepth: 3, MaxConcurrent: 1 << 20, MaxLiveCapsules: 1 << 20,
		SpawnAllow: []string{"local/orchestrator", "local/self"}, Registry: StoreRegistry(fx.reg)})
	if err != nil {
		t.Fatal(err)
	}
	ft := &fuzzTarget{srv: srv}
	r := ft.serve(t, "POST", "/register", nil, `{"session_id": "ses_fuzz", "name": "local/orchestrator", "version": "0.1.0"}`)
	ft.cred = r.str("credential")
	r = ft.serve(t, "POST", "/spawn", map[string]string{HeaderCredential: ft.cred}, `{"name": "local/worker-a", "version": "0.1.0"}`)
	ft.approval = r.str("approval")
	if ft.cred == "" || ft.approval == "" {
		t.Fatal("fuzz target setup failed")
	}
	return ft
}

// serve runs one request through the handler and checks what every answer
// must satisfy: no panic (a panic fails the fuzz run), a JSON object body,
// and no 5xx except the resolve failure.
func (ft *fuzzTarget) serve(t testing.TB, method, path string, hdr map[string]string, body string) reply {
	req := httptest.NewRequest(method, "http://127.0.0.1/", strings.NewReader(body))
	req.URL.Path = path
	for k, v := range hdr {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	rec := httptest.NewRecorder()
	ft.srv.ServeHTTP(rec, req)
	r := reply{code: rec.Code, raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.body); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object", method, path, r.raw)
	}
	if r.code >= 500 && !(r.code == 500 && strings.Contains(r.errMsg(), "could not be resolved from the registry")) {
		t.Fatalf("%s %s %q: %d %s", method, path, body, r.code, r.raw)
	}
	switch r.code {
	case 200, 400, 403, 404, 405, 500:
	default:
		t.Fatalf("%s %s: unexpected status %d", method, path, r.code)
	}
	return r
}

// token picks the token a fuzz case presents: mode 0 the fuzz text itself,
// 1 the valid credential with the text appended, 2 the valid approval with
// the text appended, 3 the valid credential with one byte changed at the
// text's length, 4 the valid approval likewise.
func (ft *fuzzTarget) token(mode uint8, text string) string {
	edit := func(tok string) string {
		if len(tok) == 0 {
			return text
		}
		i := len(text) % len(tok)
		b := []byte(tok)
		b[i] ^= 1 + byte(len(text))%7
		return string(b)
	}
	switch mode % 5 {
	case 1:
		return ft.cred + text
	case 2:
		return ft.approval + text
	case 3:
		return edit(ft.cred)
	case 4:
		return edit(ft.approval)
	}
	return text
}

func FuzzSpawnRequest(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add(`{"name": "local/worker-a", "version": "0.1.0"}`, uint8(1), "")
	f.Add(`{"name": "local/worker-a", "version": "9.9.9"}`, uint8(1), "")
	f.Add(`{"name": "local/wide", "version": "0.1.0", "extra": [1, 2]}`, uint8(1), "")
	f.Add(`{"name": "local/worker-a", "version": "0.1.0"}`, uint8(3), "xyz")
	f.Add(`{"name": "local/../etc", "version": "0.1.0"}`, uint8(1), "")
	f.Add(`{"name": "local/worker-a", "version": "../../x"}`, uint8(1), "")
	f.Add(`[]`, uint8(0), "msc1.e30.AAAA")
	f.Add(`{"name": "local/worker-a", "version": "0.1.0"}`, uint8(2), "")
	f.Fuzz(func(t *testing.T, body string, mode uint8, text string) {
		hdr := map[string]string{}
		if mode != 255 {
			hdr[HeaderCredential] = ft.token(mode, text)
		}
		r := ft.serve(t, "POST", "/spawn", hdr, body)
		if r.code == 200 && mode%5 != 1 {
			t.Fatalf("granted on a token that is not the credential (mode %d)", mode)
		}
		if r.code == 200 && text != "" {
			t.Fatalf("granted on an altered credential %q", text)
		}
	})
}

func FuzzRegisterRequest(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add(`{"session_id": "ses_a", "name": "local/worker-a", "version": "0.1.0"}`, uint8(2), "", true)
	f.Add(`{"session_id": "ses_b", "name": "local/orchestrator", "version": "0.1.0"}`, uint8(0), "", false)
	f.Add(`{"session_id": "ses_c", "name": "local/worker-a", "version": "0.1.0"}`, uint8(4), "a", true)
	f.Add(`{"session_id": "", "name": "local/worker-a", "version": "0.1.0"}`, uint8(0), "", false)
	f.Add(`{"session_id": "ses_d", "name": "local/worker-a", "version": "0.2.0"}`, uint8(1), "", true)
	f.Add(`{"session_id": 5}`, uint8(0), "", true)
	f.Add(`{"session_id": "ses_e", "name": "local/missing", "version": "1"}`, uint8(2), "zz", true)
	f.Fuzz(func(t *testing.T, body string, mode uint8, text string, withApproval bool) {
		hdr := map[string]string{}
		if withApproval {
			hdr[HeaderApproval] = ft.token(mode, text)
		}
		r := ft.serve(t, "POST", "/register", hdr, body)
		if r.code == 200 && withApproval && (mode%5 != 2 || text != "") {
			t.Fatalf("registered on an approval that is not the one granted (mode %d, %q)", mode, text)
		}
	})
}

func FuzzDeregisterRequest(f *testing.F) {
	f.Add(`{"outcome": "complete"}`, uint8(3), "q")
	f.Add(`{"outcome": "failed"}`, uint8(0), "msc1.x.y")
	f.Add(`{"outcome": null}`, uint8(1), "")
	f.Add(`{"outcome": "complete", "outcome": "x"}`, uint8(1), "")
	ft := newFuzzTarget(f)
	f.Fuzz(func(t *testing.T, body string, mode uint8, text string) {
		// Mode 1 with no text is the real credential; it is left out so the
		// fuzz target's session stays running for every other case (the
		// body is checked before the credential either way).
		if mode%5 == 1 && text == "" {
			return
		}
		r := ft.serve(t, "POST", "/deregister", map[string]string{HeaderCredential: ft.token(mode, text)}, body)
		if r.code == 200 {
			t.Fatalf("deregistered with token mode %d %q and body %q", mode, text, body)
		}
	})
}

func FuzzStatusPath(f *testing.F) {
	ft := newFuzzTarget(f)
	for _, s := range []string{"ses_fuzz", "", "../health", "%2e%2e", "ses_fuzz/x", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		r := ft.serve(t, "GET", "/status/"+id, nil, "")
		if id == "ses_fuzz" && r.code != 200 {
			t.Fatalf("status of the running session: %d %s", r.code, r.raw)
		}
		if id != "ses_fuzz" && (r.code != 404 || r.raw != `{"error": "session not found"}`) {
			t.Fatalf("status %q: %d %s", id, r.code, r.raw)
		}
	})
}

// FuzzTokenOpen: a token that the minter did not produce never opens, and
// opening never panics.
func FuzzTokenOpen(f *testing.F) {
	m, err := newMinter(credentialPrefix)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := m.mint(credentialPayload{V: 1, S: "ses_x"})
	f.Add(good)
	f.Add("msc1.")
	f.Add("msc1..")
	f.Add("msc1.eyJ2IjoxLCJzIjoic2VzX3gifQ.")
	f.Add("msa1." + good[5:])
	f.Add(good + "\r\n")
	f.Add(good[:10] + "\n" + good[10:])
	f.Fuzz(func(t *testing.T, tok string) {
		var p credentialPayload
		if m.open(tok, &p) == nil && tok != good {
			// Only a token this minter MAC'd opens. Base64url without
			// padding has one canonical form (Strict), so no other text
			// decodes to the same signed bytes and MAC.
			t.Fatalf("forged token opened: %q", tok)
		}
	})
}
