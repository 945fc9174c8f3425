package formation

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
)

// The channel: a pipe per member whose only write end the launcher holds,
// carrying two lines of compact JSON, each at most MaxLineBytes. Line 1
// (credentials) is written before the member starts; line 2 (addresses)
// once every peer's door answers.
const (
	MaxLineBytes = 32 << 10
	// Line1Wait is how long a member waits for line 1.
	Line1Wait = 10 * time.Second
	// EnvChannel names the channel's descriptor in a member's environment.
	EnvChannel = "MURMUR_FORMATION_CHANNEL"
)

// Launcher identifies the launching process (§6's process_start form).
type Launcher struct {
	PID          int    `json:"pid"`
	ProcessStart string `json:"process_start"`
}

// Call is one callee on line 1: its name and the token for that edge.
type Call struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

// Line1 is the channel's first line; field order is the wire's key order.
type Line1 struct {
	V           int      `json:"v"`
	FormationID string   `json:"formation_id"`
	Member      string   `json:"member"`
	Entry       bool     `json:"entry"`
	Project     string   `json:"project"`
	SHA256      string   `json:"sha256"`
	Launcher    Launcher `json:"launcher"`
	VerifyKey   string   `json:"verify_key"`
	Calls       []Call   `json:"calls"`
}

// Address is one callee's door on line 2.
type Address struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Line2 is the channel's second line.
type Line2 struct {
	Addresses []Address `json:"addresses"`
}

// EncodeKey is a verify key's wire form.
func EncodeKey(pub ed25519.PublicKey) string { return b64.EncodeToString(pub) }

// DecodeKey reads a verify key's wire form.
func DecodeKey(s string) (ed25519.PublicKey, error) {
	b, err := b64.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("not 32 bytes of base64url")
	}
	return ed25519.PublicKey(b), nil
}

// Encode returns a line's bytes, newline included.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if buf.Len()-1 > MaxLineBytes {
		return nil, fmt.Errorf("a channel line of %d bytes is over %d", buf.Len()-1, MaxLineBytes)
	}
	return buf.Bytes(), nil
}

// channelErr is E-RUN-046 for line 1: it names the variable and the reason
// and never quotes the line (it holds tokens).
func channelErr(why string, args ...any) *diag.Diagnostic {
	return diag.New("E-RUN-046", "%s: channel line 1 refuses this launch: %s", EnvChannel, fmt.Sprintf(why, args...)).
		WithHint("the channel is written by mur run --roster only; start members through it")
}

// ReadLine1 reads line 1 from br within wait and checks it (ParseLine1).
// br stays the caller's: line 2 may already be buffered behind line 1.
func ReadLine1(br *bufio.Reader, formationID string, wait time.Duration) (*Line1, error) {
	type res struct {
		line []byte
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		line, err := readLine(br)
		ch <- res{line, err}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case got := <-ch:
		switch {
		case errors.Is(got.err, io.EOF):
			return nil, channelErr("end of the channel before line 1")
		case got.err == errTooLong:
			return nil, channelErr("%v", got.err)
		case got.err != nil:
			return nil, channelErr("cannot read it: %v", got.err)
		}
		return ParseLine1(got.line, formationID)
	case <-t.C:
		return nil, channelErr("no line within %s", wait)
	}
}

// readLine reads one line of at most MaxLineBytes (newline excluded).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLineBytes+1 || len(line) == MaxLineBytes+1 && line[len(line)-1] != '\n' {
			return nil, errTooLong
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

var errTooLong = fmt.Errorf("the line is over %d bytes", MaxLineBytes)

// ParseLine1 checks line 1 (without its newline) for the member whose
// MURMUR_FORMATION_ID is formationID. Every refusal is E-RUN-046.
func ParseLine1(line []byte, formationID string) (*Line1, error) {
	if len(line) > MaxLineBytes {
		return nil, channelErr("the line is over %d bytes", MaxLineBytes)
	}
	var raw map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(line))
	if err := d.Decode(&raw); err != nil || raw == nil || d.More() {
		return nil, channelErr("it is not a JSON object")
	}
	var l Line1
	field := func(key string, dst any, want string) error {
		v, ok := raw[key]
		if !ok {
			return channelErr("the key %s is missing", key)
		}
		if !jsonKind(v, want) || json.Unmarshal(v, dst) != nil {
			return channelErr("the key %s is not %s", key, want)
		}
		return nil
	}
	if err := field("v", &l.V, "a number"); err != nil {
		return nil, err
	}
	if l.V != 1 {
		return nil, channelErr("version %d is not 1", l.V)
	}
	for _, f := range []struct {
		key  string
		dst  any
		want string
	}{
		{"formation_id", &l.FormationID, "a string"},
		{"member", &l.Member, "a string"},
		{"entry", &l.Entry, "a boolean"},
		{"project", &l.Project, "a string"},
		{"sha256", &l.SHA256, "a string"},
		{"launcher", &l.Launcher, "an object"},
		{"verify_key", &l.VerifyKey, "a string"},
		{"calls", &l.Calls, "a list"},
	} {
		if err := field(f.key, f.dst, f.want); err != nil {
			return nil, err
		}
	}
	if !ids.Valid(ids.Formation, l.FormationID) {
		return nil, channelErr("formation_id is not a formation id")
	}
	if l.FormationID != formationID {
		return nil, channelErr("formation_id is not MURMUR_FORMATION_ID")
	}
	if !ValidMemberName(l.Member) {
		return nil, channelErr("member is not a member name")
	}
	if !filepath.IsAbs(l.Project) {
		return nil, channelErr("project is not an absolute directory")
	}
	if fi, err := os.Stat(l.Project); err != nil || !fi.IsDir() {
		return nil, channelErr("project is not an absolute directory")
	}
	if !isLowerHex64(l.SHA256) {
		return nil, channelErr("sha256 is not 64 lowercase hex digits")
	}
	if l.Launcher.PID <= 0 || l.Launcher.ProcessStart == "" {
		return nil, channelErr("launcher has no positive pid and process_start")
	}
	key, err := b64.DecodeString(l.VerifyKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, channelErr("verify_key is not 32 bytes of base64url")
	}
	seen := map[string]bool{}
	for i, c := range l.Calls {
		switch {
		case !ValidMemberName(c.Name):
			return nil, channelErr("calls[%d] has no valid member name", i)
		case seen[c.Name]:
			return nil, channelErr("calls[%d] repeats '%s'", i, c.Name)
		case c.Name == l.Member:
			return nil, channelErr("calls[%d] names the member itself", i)
		}
		seen[c.Name] = true
		if from, v := VerifyToken(key, l.FormationID, c.Name, c.Token); v != TokenValid || from != l.Member {
			return nil, channelErr("the token of calls[%d] ('%s') was not issued in this formation from '%s' to '%s'", i, c.Name, l.Member, c.Name)
		}
	}
	if l.Calls == nil {
		l.Calls = []Call{}
	}
	return &l, nil
}

// ReadLine2 reads the addresses line from the reader ReadLine1 read.
func ReadLine2(br *bufio.Reader) (*Line2, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, fmt.Errorf("channel line 2: %w", err)
	}
	return ParseLine2(line)
}

// ParseLine2 reads the addresses line; a line that does not parse is an
// error the member logs and ignores.
func ParseLine2(line []byte) (*Line2, error) {
	var l Line2
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&l); err != nil {
		return nil, fmt.Errorf("channel line 2 does not parse: %w", err)
	}
	for i, a := range l.Addresses {
		if !ValidMemberName(a.Name) || a.URL == "" {
			return nil, fmt.Errorf("channel line 2: addresses[%d] is not a member's door", i)
		}
	}
	return &l, nil
}

// jsonKind reports whether raw JSON v is of the wanted kind.
func jsonKind(v json.RawMessage, want string) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch want {
	case "a string":
		return v[0] == '"'
	case "a boolean":
		return string(v) == "true" || string(v) == "false"
	case "an object":
		return v[0] == '{'
	case "a list":
		return v[0] == '['
	case "a number":
		return v[0] == '-' || v[0] >= '0' && v[0] <= '9'
	}
	return false
}

func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
