package delegate

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestReadSpawnerRefusesBadHandles(t *testing.T) {
	good := `{"url":"http://127.0.0.1:1","session_id":"ses_1","context_id":"ctx_1","delegation_id":"dlg_1"}`
	if s, err := ReadSpawner(env(map[string]string{EnvSpawner: good})); err != nil || s.DelegationID != "dlg_1" {
		t.Fatalf("good handle: %v %v", s, err)
	}
	if s, err := ReadSpawner(env(map[string]string{EnvSpawner: "  "})); s != nil || err != nil {
		t.Fatalf("blank is absent: %v %v", s, err)
	}
	for name, v := range map[string]string{
		"not JSON":      "nope",
		"other session": `{"url":"http://127.0.0.1:1","session_id":"sess","context_id":"ctx_1","delegation_id":"dlg_1"}`,
		"missing field": `{"url":"http://127.0.0.1:1","session_id":"ses_1","delegation_id":"dlg_1"}`,
		"extra field":   `{"url":"http://x","session_id":"ses_1","context_id":"c","delegation_id":"dlg_1","x":1}`,
	} {
		_, err := ReadSpawner(env(map[string]string{EnvSpawner: v}))
		if d, ok := err.(*diag.Diagnostic); !ok || d.Code != "E-RUN-020" || !strings.Contains(err.Error(), EnvSpawner) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestOpenLifelineRefusesAnythingButAPipeReadEnd(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	closed, _ := os.Open(os.DevNull)
	cfd := closed.Fd()
	closed.Close()
	for name, v := range map[string]string{
		"fd 1":           "1",
		"not a number":   "three",
		"closed":         strconv.Itoa(int(cfd) + 1000),
		"a file":         strconv.Itoa(int(f.Fd())),
		"pipe write end": strconv.Itoa(int(w.Fd())),
	} {
		_, err := OpenLifeline(env(map[string]string{EnvSpawnerLifeline: v}))
		if d, ok := err.(*diag.Diagnostic); !ok || d.Code != "E-RUN-020" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The returned file owns the descriptor it names: hand it a duplicate,
	// so two *os.File never close one number (a finalizer closing a reused
	// descriptor breaks whatever opened it next).
	dup, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := OpenLifeline(env(map[string]string{EnvSpawnerLifeline: strconv.Itoa(dup)}))
	if err != nil || lf == nil {
		syscall.Close(dup)
		t.Fatalf("read end: %v", err)
	}
	lf.Close()
}
