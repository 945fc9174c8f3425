package manifest

import (
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
)

func TestExportsPeerFiles(t *testing.T) {
	agent := "name: a\nversion: 0.1.0\nartifacts:\n  - name: murmur/driver-replay\n    version: \"1.0.0\"\n    runtime: driver\ninference:\n  model: m\n  driver:\n    artifact: murmur/driver-replay\n"
	tests := []struct {
		name, yaml, code, msg string
		root                  string
		ttl                   time.Duration
		max                   int64
	}{
		{"defaults", agent + "exports:\n  peer_files:\n    root: share\n", "", "", "share", 15 * time.Minute, 10 << 20},
		{"cleaned", agent + "exports:\n  peer_files:\n    root: ./a/../share/\n    max_ttl: 90\n    max_bytes: 5\n", "", "", "share", 90 * time.Second, 5},
		{"duration", agent + "exports:\n  peer_files:\n    root: s\n    max_ttl: 1h\n", "", "", "s", time.Hour, 10 << 20},
		{"no root", agent + "exports:\n  peer_files:\n    max_ttl: 1m\n", "E-MAN-030", "root is missing", "", 0, 0},
		{"empty root", agent + "exports:\n  peer_files:\n    root: \"\"\n", "E-MAN-030", "is not a folder inside the work folder", "", 0, 0},
		{"absolute", agent + "exports:\n  peer_files:\n    root: /etc\n", "E-MAN-030", `"/etc"`, "", 0, 0},
		{"escaping", agent + "exports:\n  peer_files:\n    root: a/../../x\n", "E-MAN-030", "", "", 0, 0},
		{"ttl too long", agent + "exports:\n  peer_files:\n    root: s\n    max_ttl: 2h\n", "E-MAN-031", "from 1s to 1h", "", 0, 0},
		{"ttl too short", agent + "exports:\n  peer_files:\n    root: s\n    max_ttl: 500ms\n", "E-MAN-031", "", "", 0, 0},
		{"ttl word", agent + "exports:\n  peer_files:\n    root: s\n    max_ttl: soon\n", "E-MAN-031", "", "", 0, 0},
		{"max_bytes zero", agent + "exports:\n  peer_files:\n    root: s\n    max_bytes: 0\n", "E-MAN-008", "", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.yaml), "murmur.yaml", Options{})
			if tc.code != "" {
				if diag.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("got %v, want %s %q", err, tc.code, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := m.Exports.PeerFiles
			if f == nil || f.Root != tc.root || f.TTL() != tc.ttl || f.Bytes() != tc.max {
				t.Fatalf("got %+v", f)
			}
		})
	}
	// On a script capsule the block has no effect: W-MAN-004.
	m, err := Parse([]byte("name: s\nversion: 0.1.0\nexports:\n  peer_files:\n    root: share\n"), "murmur.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range m.Warnings {
		found = found || w.Code == "W-MAN-004"
	}
	if !found {
		t.Errorf("no W-MAN-004: %v", m.Warnings)
	}
}
