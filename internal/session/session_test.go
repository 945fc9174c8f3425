package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/running"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestNewLaysOutTheSession(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	s, err := New(Config{
		Home: homeDir, ManifestDir: proj, Name: "local/worker-a", Version: "0.1.0",
		Task: "count the lines", ManifestYAML: []byte("name: worker-a\n"),
		Grants: json.RawMessage(`{"env":{"allow":["LANG"]},"network":{"allow":[],"unix_sockets":false},"limits":{"deadline_seconds":5}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ids.Valid(ids.Session, s.ID) {
		t.Fatalf("session id %q", s.ID)
	}
	if want := filepath.Join(proj, "workdir", s.ID); s.Workdir != want {
		t.Errorf("workdir %s, want %s", s.Workdir, want)
	}
	wantRec := filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(proj, "/"), s.ID)
	if s.RecordsDir != wantRec {
		t.Errorf("records dir %s, want %s", s.RecordsDir, wantRec)
	}
	if want := filepath.Join(homeDir, ".murmur", "sessions", s.ID, "runtime"); s.RuntimeDir != want {
		t.Errorf("runtime dir %s, want %s", s.RuntimeDir, want)
	}
	for _, d := range []string{s.Workdir, s.RecordsDir, filepath.Join(s.RecordsDir, "logs"), filepath.Join(s.RecordsDir, "out"),
		filepath.Join(homeDir, ".murmur", "records"), s.RuntimeDir, filepath.Join(homeDir, ".murmur", "sessions", s.ID)} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("%s mode %o, want 700", d, m)
		}
	}
	task, _ := os.ReadFile(filepath.Join(s.RuntimeDir, "task.md"))
	man, _ := os.ReadFile(filepath.Join(s.RuntimeDir, "murmur.yaml"))
	doc, _ := os.ReadFile(filepath.Join(s.RuntimeDir, "MURMUR.md"))
	if string(task) != "count the lines" || string(man) != "name: worker-a\n" {
		t.Errorf("task.md %q, murmur.yaml %q", task, man)
	}
	for _, want := range []string{"local/worker-a", "0.1.0", s.ID, "env.allow: LANG", "limits.deadline_seconds: 5"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("MURMUR.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(string(doc), "unix_sockets") || strings.Contains(string(doc), "url:") {
		t.Errorf("MURMUR.md lists what is not granted:\n%s", doc)
	}

	if w := s.WriteRunningRecord(); w != nil {
		t.Fatal(w)
	}
	entries, _ := running.Scan(s.RunningDir)
	if len(entries) != 1 || entries[0].State != running.Live || entries[0].Record.URL != nil ||
		entries[0].Record.RecordsDir != s.RecordsDir || entries[0].Record.CapsuleName != "local/worker-a" {
		t.Fatalf("running records: %+v", entries)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := running.Scan(s.RunningDir); len(entries) != 0 {
		t.Errorf("record left after Close: %+v", entries)
	}
	if _, err := os.Stat(filepath.Join(homeDir, ".murmur", "sessions", s.ID)); !os.IsNotExist(err) {
		t.Errorf("runtime dir left after Close: %v", err)
	}
	if _, err := os.Stat(s.RecordsDir); err != nil {
		t.Errorf("records dir gone after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCapsuleRunWorkdirAndRecords(t *testing.T) {
	homeDir, cwd := t.TempDir(), t.TempDir()
	s, err := New(Config{Home: homeDir, Cwd: cwd, Name: "acme/x", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := filepath.Join(cwd, "workdir", s.ID); s.Workdir != want {
		t.Errorf("workdir %s, want %s", s.Workdir, want)
	}
	if s.ProjectDir != s.Workdir || s.RecordsDir != filepath.Join(home.ProjectRecords(homeDir, s.Workdir), s.ID) {
		t.Errorf("project %s records %s", s.ProjectDir, s.RecordsDir)
	}

	s2, err := New(Config{Home: homeDir, Cwd: cwd, Workdir: "rel/wd", Name: "acme/x", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Workdir != filepath.Join(cwd, "rel/wd") {
		t.Errorf("--workdir rel: %s", s2.Workdir)
	}
}

func TestUnwritablePlaces(t *testing.T) {
	homeDir := t.TempDir()
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := New(Config{Home: homeDir, Cwd: t.TempDir(), Workdir: filepath.Join(blocker, "wd")}); diag.Code(err) != "E-IO-052" {
		t.Errorf("workdir under a file: %v", err)
	}
	badHome := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(badHome, 0o700)
	os.WriteFile(filepath.Join(badHome, ".murmur"), nil, 0o600)
	// The session marks itself begun under ~/.murmur/sessions before any
	// other dir of it exists.
	if _, err := New(Config{Home: badHome, Cwd: t.TempDir()}); diag.Code(err) != "E-IO-054" {
		t.Errorf(".murmur is a file: %v", err)
	}
	recHome := t.TempDir()
	os.MkdirAll(home.Murmur(recHome), 0o700)
	os.WriteFile(home.Records(recHome), nil, 0o600)
	if _, err := New(Config{Home: recHome, Cwd: t.TempDir()}); diag.Code(err) != "E-IO-053" {
		t.Errorf("records is a file: %v", err)
	}
	if left, _ := os.ReadDir(home.Sessions(recHome)); len(left) != 0 {
		t.Errorf("a session that could not start left %v in the sessions dir", left)
	}
}

func TestRunningRecordFailureIsAWarning(t *testing.T) {
	homeDir := t.TempDir()
	s, err := New(Config{Home: homeDir, Cwd: t.TempDir(), Name: "a/b", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.WriteFile(s.RunningDir, []byte("not a dir"), 0o600) // ~/.murmur/running is a file
	w := s.WriteRunningRecord()
	if w == nil || w.Code != "W-SEC-023" {
		t.Fatalf("warning = %v", w)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after a failed record: %v", err)
	}
}

func TestApplyRetain(t *testing.T) {
	now := time.Now()
	mk := func(t *testing.T, dir string, ages ...time.Duration) []string {
		var out []string
		for _, a := range ages {
			id := ids.AtTime(ids.Session, now.Add(-a))
			os.MkdirAll(filepath.Join(dir, id, "logs"), 0o700)
			out = append(out, id)
		}
		return out
	}
	exists := func(dir, id string) bool { _, err := os.Stat(filepath.Join(dir, id)); return err == nil }

	t.Run("max_sessions counts the current one", func(t *testing.T) {
		dir, runDir := t.TempDir(), t.TempDir()
		old := mk(t, dir, 5*time.Hour, 4*time.Hour, 3*time.Hour, 2*time.Hour)
		cur := mk(t, dir, 0)[0]
		removed, ws := ApplyRetain(dir, cur, Retain{MaxSessions: 3}, runDir, now)
		if len(ws) != 0 || len(removed) != 2 {
			t.Fatalf("removed %v warnings %v", removed, ws)
		}
		for i, id := range old {
			if want := i >= 2; exists(dir, id) != want {
				t.Errorf("session %d (%s) exists=%v want %v", i, id, !want, want)
			}
		}
		if !exists(dir, cur) {
			t.Error("the current session was removed")
		}
	})
	t.Run("max_age and a live session", func(t *testing.T) {
		dir, runDir := t.TempDir(), t.TempDir()
		ss := mk(t, dir, 10*24*time.Hour, 8*24*time.Hour, time.Hour)
		cur := ids.AtTime(ids.Session, now.Add(-30*24*time.Hour)) // current, and old: still kept
		os.MkdirAll(filepath.Join(dir, cur), 0o700)
		pid, start, _ := running.Self()
		running.Write(runDir, running.Record{SessionID: ss[1], PID: pid, ProcessStart: start, RecordsDir: filepath.Join(dir, ss[1])})
		os.MkdirAll(filepath.Join(dir, "not-a-session"), 0o700)
		removed, _ := ApplyRetain(dir, cur, Retain{MaxAge: 7 * 24 * time.Hour}, runDir, now)
		if len(removed) != 1 || removed[0] != ss[0] {
			t.Fatalf("removed %v, want only %s", removed, ss[0])
		}
		if !exists(dir, ss[1]) || !exists(dir, ss[2]) || !exists(dir, cur) || !exists(dir, "not-a-session") {
			t.Error("removed something retain must keep")
		}
	})
	t.Run("nothing declared", func(t *testing.T) {
		dir := t.TempDir()
		mk(t, dir, 1000*time.Hour)
		if removed, _ := ApplyRetain(dir, "ses_x", Retain{}, t.TempDir(), now); len(removed) != 0 {
			t.Fatalf("removed %v with no retain", removed)
		}
	})
}

// mur run hands over manifest.Grants as JSON: MURMUR.md then lists every axis
// in the words `mur run --explain-scope` prints.
func TestIdentityDocListsEffectiveGrants(t *testing.T) {
	m, err := manifest.Parse([]byte("name: worker-a\nversion: 0.1.0\ncapabilities:\n  env:\n    allow: [LANG]\n"+
		"  spawn:\n    allow: [acme/b]\n    workdir_snapshot: [acme/b]\nartifacts:\n  - name: acme/lint\n    version: 1.0.0\n"),
		"murmur.yaml", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.EffectiveGrants()
	raw, _ := json.Marshal(g)
	s := &Session{ID: "ses_0123456789abcdef0123456789abcdef", Name: m.Name, Version: m.Version}
	doc := IdentityDoc(s, raw)
	for _, want := range []string{"- capsule: local/worker-a\n", "- version: 0.1.0\n", "- session: " + s.ID + "\n",
		"  env:                    LANG\n", "  spawn workdir snapshot: acme/b\n", "  shell:                  none\n",
		"  acme/lint@1.0.0 (tool): the capsule's grants\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("MURMUR.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "{") || strings.Contains(doc, "url:") {
		t.Errorf("MURMUR.md holds raw JSON or a url for a script capsule:\n%s", doc)
	}
}
