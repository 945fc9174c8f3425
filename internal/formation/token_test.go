package formation

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
)

func keyPair(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func TestTokenWire(t *testing.T) {
	pub, priv := keyPair(t)
	frm := ids.New(ids.Formation)
	tok := MintToken(priv, frm, "lead", "worker")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != "mft1" {
		t.Fatalf("token %q", tok)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || string(payload) != `{"formation":"`+frm+`","from":"lead","to":"worker"}` {
		t.Fatalf("payload %s %v", payload, err)
	}
	// The signed bytes are exactly domain 0x1f tag 0x1f payload-base64.
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !ed25519.Verify(pub, []byte("murmur-formation-token-v1\x1fmft1\x1f"+parts[1]), sig) {
		t.Fatal("signature does not cover the documented bytes")
	}
}

func TestVerifyToken(t *testing.T) {
	pub, priv := keyPair(t)
	otherPub, otherPriv := keyPair(t)
	frm, frm2 := ids.New(ids.Formation), ids.New(ids.Formation)
	good := MintToken(priv, frm, "lead", "worker")
	sign := func(payload string) string {
		p := base64.RawURLEncoding.EncodeToString([]byte(payload))
		return "mft1." + p + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, signed(p)))
	}
	parts := strings.Split(good, ".")
	cases := []struct {
		name string
		pub  ed25519.PublicKey
		tok  string
		from string
		want Verdict
	}{
		{"valid", pub, good, "lead", TokenValid},
		{"another member's", pub, MintToken(priv, frm, "lead", "other"), "lead", TokenNotPermitted},
		{"no tag", pub, strings.TrimPrefix(good, "mft1."), "", TokenInvalid},
		{"operator token", pub, "mdt1.abc", "", TokenInvalid},
		{"door in no formation", nil, good, "", TokenInvalid},
		{"two parts", pub, "mft1." + parts[1], "", TokenInvalid},
		{"four parts", pub, good + ".x", "", TokenInvalid},
		{"padded", pub, good + "==", "", TokenInvalid},
		{"short signature", pub, "mft1." + parts[1] + "." + parts[2][:40], "", TokenInvalid},
		{"forged", pub, "mft1." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 64)), "", TokenInvalid},
		{"another key", otherPub, good, "", TokenInvalid},
		{"another formation's key and id", pub, MintToken(otherPriv, frm2, "lead", "worker"), "", TokenInvalid},
		{"cross-formation (same key, other id)", pub, MintToken(priv, frm2, "lead", "worker"), "", TokenInvalid},
		{"extra key", pub, sign(`{"formation":"` + frm + `","from":"lead","to":"worker","x":"y"}`), "", TokenInvalid},
		{"number name", pub, sign(`{"formation":"` + frm + `","from":1,"to":"worker"}`), "", TokenInvalid},
		{"bad name", pub, sign(`{"formation":"` + frm + `","from":"Lead","to":"worker"}`), "", TokenInvalid},
		{"not json", pub, sign(`nope`), "", TokenInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from, v := VerifyToken(c.pub, frm, "worker", c.tok)
			if v != c.want || from != c.from {
				t.Fatalf("VerifyToken = %q, %v; want %q, %v", from, v, c.from, c.want)
			}
		})
	}
}

func BenchmarkVerifyToken(b *testing.B) {
	pub, priv := keyPair(b)
	frm := ids.New(ids.Formation)
	tok := MintToken(priv, frm, "lead", "worker")
	b.ReportAllocs()
	for b.Loop() {
		if _, v := VerifyToken(pub, frm, "worker", tok); v != TokenValid {
			b.Fatal(v)
		}
	}
}

// line1 is a valid line 1 for member lead of frm.
func line1(t testing.TB, frm string, priv ed25519.PrivateKey, pub ed25519.PublicKey, project string) Line1 {
	return Line1{V: 1, FormationID: frm, Member: "lead", Entry: true, Project: project,
		SHA256: strings.Repeat("a", 64), Launcher: Launcher{PID: 42, ProcessStart: "boot:1"},
		VerifyKey: EncodeKey(pub), Calls: []Call{{"worker", MintToken(priv, frm, "lead", "worker")}}}
}

func TestChannelLine1(t *testing.T) {
	pub, priv := keyPair(t)
	frm := ids.New(ids.Formation)
	project := t.TempDir()
	good := line1(t, frm, priv, pub, project)
	b, err := Encode(good)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"formation_id":"` + frm + `","member":"lead","entry":true,"project":"` + project + `","sha256":"` + good.SHA256 +
		`","launcher":{"pid":42,"process_start":"boot:1"},"verify_key":"` + good.VerifyKey + `","calls":[{"name":"worker","token":"` + good.Calls[0].Token + `"}]}` + "\n"
	if string(b) != want {
		t.Fatalf("line 1:\n%s\nwant\n%s", b, want)
	}
	l, err := ParseLine1(b[:len(b)-1], frm)
	if err != nil || l.Calls[0].Name != "worker" || l.Launcher.PID != 42 {
		t.Fatalf("%+v %v", l, err)
	}

	edit := func(f func(*Line1)) []byte {
		l := line1(t, frm, priv, pub, project)
		f(&l)
		b, _ := Encode(l)
		return b[:len(b)-1]
	}
	replace := func(old, new string) []byte {
		return []byte(strings.Replace(string(b[:len(b)-1]), old, new, 1))
	}
	_, otherPriv := keyPair(t)
	cases := []struct {
		name string
		line []byte
		has  string
	}{
		{"not json", []byte("hello"), "it is not a JSON object"},
		{"a list", []byte("[1]"), "it is not a JSON object"},
		{"two values", append(append([]byte{}, b[:len(b)-1]...), []byte(" {}")...), "it is not a JSON object"},
		{"v 2", replace(`"v":1`, `"v":2`), "version 2 is not 1"},
		{"v missing", replace(`"v":1,`, ``), "the key v is missing"},
		{"entry string", replace(`"entry":true`, `"entry":"true"`), "the key entry is not a boolean"},
		{"calls missing", replace(`,"calls"`, `,"callz"`), "the key calls is missing"},
		{"launcher list", replace(`"launcher":{"pid":42,"process_start":"boot:1"}`, `"launcher":[]`), "the key launcher is not an object"},
		{"bad id", edit(func(l *Line1) { l.FormationID = "frm_x" }), "formation_id is not a formation id"},
		{"other id", edit(func(l *Line1) { l.FormationID = ids.New(ids.Formation) }), "formation_id is not MURMUR_FORMATION_ID"},
		{"member", edit(func(l *Line1) { l.Member = "Lead" }), "member is not a member name"},
		{"relative project", edit(func(l *Line1) { l.Project = "rel" }), "project is not an absolute directory"},
		{"missing project", edit(func(l *Line1) { l.Project = project + "/gone" }), "project is not an absolute directory"},
		{"sha upper", edit(func(l *Line1) { l.SHA256 = strings.Repeat("A", 64) }), "sha256 is not 64 lowercase hex digits"},
		{"pid 0", edit(func(l *Line1) { l.Launcher.PID = 0 }), "launcher has no positive pid"},
		{"no start", edit(func(l *Line1) { l.Launcher.ProcessStart = "" }), "launcher has no positive pid"},
		{"key short", edit(func(l *Line1) { l.VerifyKey = l.VerifyKey[:20] }), "verify_key is not 32 bytes of base64url"},
		{"call name", edit(func(l *Line1) { l.Calls[0].Name = "W" }), "calls[0] has no valid member name"},
		{"call repeated", edit(func(l *Line1) { l.Calls = append(l.Calls, l.Calls[0]) }), "calls[1] repeats 'worker'"},
		{"call self", edit(func(l *Line1) { l.Calls[0].Name = "lead" }), "calls[0] names the member itself"},
		{"token for another edge", edit(func(l *Line1) { l.Calls[0].Token = MintToken(priv, frm, "lead", "other") }), "the token of calls[0] ('worker') was not issued"},
		{"token from another member", edit(func(l *Line1) { l.Calls[0].Token = MintToken(priv, frm, "other", "worker") }), "was not issued in this formation from 'lead' to 'worker'"},
		{"token of another key", edit(func(l *Line1) { l.Calls[0].Token = MintToken(otherPriv, frm, "lead", "worker") }), "was not issued"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLine1(c.line, frm)
			if diag.Code(err) != "E-RUN-046" || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("err = %v, want E-RUN-046 holding %q", err, c.has)
			}
			if strings.Contains(err.Error(), "mft1.") || strings.Contains(err.Error(), good.VerifyKey) {
				t.Fatalf("the refusal quotes the line: %v", err)
			}
		})
	}
}

func TestReadLine1(t *testing.T) {
	pub, priv := keyPair(t)
	frm := ids.New(ids.Formation)
	l1, _ := Encode(line1(t, frm, priv, pub, t.TempDir()))
	l2, _ := Encode(Line2{Addresses: []Address{{"worker", "http://127.0.0.1:1234"}}})

	// Both lines already in the pipe (the entry's case): line 2 stays readable.
	r, w, _ := os.Pipe()
	w.Write(append(l1, l2...))
	w.Close()
	br := bufio.NewReader(r)
	if _, err := ReadLine1(br, frm, time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLine2(br)
	if err != nil || got.Addresses[0].URL != "http://127.0.0.1:1234" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := ReadLine2(br); err == nil {
		t.Fatal("a third line after EOF")
	}

	for name, c := range map[string]struct {
		data  string
		close bool
		has   string
	}{
		"eof":      {"", true, "end of the channel before line 1"},
		"partial":  {`{"v":1`, true, "end of the channel before line 1"},
		"silence":  {"", false, "no line within"},
		"too long": {strings.Repeat("x", MaxLineBytes+1) + "\n", true, "over 32768 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			r, w, _ := os.Pipe()
			defer r.Close()
			go func() {
				io.WriteString(w, c.data)
				if c.close {
					w.Close()
				}
			}()
			if !c.close {
				defer w.Close()
			}
			_, err := ReadLine1(bufio.NewReader(r), frm, 200*time.Millisecond)
			if diag.Code(err) != "E-RUN-046" || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("err = %v, want %q", err, c.has)
			}
		})
	}
	if _, err := ParseLine2([]byte(`{"addresses":[{"name":"w","url":"http://x"}],"more":1}`)); err == nil {
		t.Fatal("line 2 with an unknown key parsed")
	}
}

func FuzzParseLine1(f *testing.F) {
	pub, priv := keyPair(f)
	frm := "frm_0193b3c2d4e5f60718293a4b5c6d7e8f"
	good, _ := Encode(line1(f, frm, priv, pub, "/"))
	f.Add(good[:len(good)-1])
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"formation_id":"` + frm + `","member":"a","entry":false,"project":"/","sha256":"","launcher":{},"verify_key":"","calls":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLine1(data, frm)
		if err != nil {
			if diag.Code(err) != "E-RUN-046" {
				t.Fatalf("code %v", err)
			}
			if len(data) > 8 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("the refusal quotes the line")
			}
			return
		}
		if l.FormationID != frm || l.V != 1 || !ValidMemberName(l.Member) || l.Calls == nil {
			t.Fatalf("accepted %+v", l)
		}
	})
}

// BenchmarkEd25519Verify is the floor VerifyToken stands on: one verify.
func BenchmarkEd25519Verify(b *testing.B) {
	pub, priv := keyPair(b)
	msg := signed("payload")
	sig := ed25519.Sign(priv, msg)
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("no")
		}
	}
}
