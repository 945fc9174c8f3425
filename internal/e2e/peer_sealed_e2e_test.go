package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sealed command sees the work folder's peer-in/ bound read-only: it
// reads a fetched file, and writing, chmod, removing and making a folder
// there all fail with the kernel's read-only file system error — which holds
// against root, where the folder's 0555 and the file's 0444 alone would not.
// A peer-in/ the capsule made a symbolic link out of the work folder is
// never bound: the sealed command does not see the link's target.
func TestSealedCommandSeesPeerInReadOnly(t *testing.T) {
	cases := []struct {
		name, extra string
		setup       func(t *testing.T, wd string) string // returns the folder whose bytes must not change
		command     string
		want        []string // in the command's log
		notWant     []string
	}{
		{
			name:  "fetched file",
			extra: "  peer_fetch:\n    allow: [127.0.0.1]\n",
			setup: func(t *testing.T, wd string) string {
				in := filepath.Join(wd, "peer-in")
				if err := os.MkdirAll(in, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(in, "0123456789abcdef-report.txt"), []byte("the report\n"), 0o444); err != nil {
					t.Fatal(err)
				}
				return in
			},
			command: "cat peer-in/0123456789abcdef-report.txt; " +
				"echo x > peer-in/new.txt || echo WRITE-REFUSED; " +
				"echo x >> peer-in/0123456789abcdef-report.txt || echo APPEND-REFUSED; " +
				"chmod 0644 peer-in/0123456789abcdef-report.txt || echo CHMOD-REFUSED; " +
				"rm -f peer-in/0123456789abcdef-report.txt || echo RM-REFUSED; " +
				"mkdir peer-in/d || echo MKDIR-REFUSED; " +
				"mv peer-in/0123456789abcdef-report.txt here.txt || echo MV-REFUSED; " +
				"echo ok > mine.txt && echo WORKDIR-WRITABLE",
			want: []string{"the report", "WRITE-REFUSED", "APPEND-REFUSED", "CHMOD-REFUSED", "RM-REFUSED", "MKDIR-REFUSED", "MV-REFUSED",
				"Read-only file system", "WORKDIR-WRITABLE"},
		},
		{
			name: "peer-in a link out",
			setup: func(t *testing.T, wd string) string {
				out := t.TempDir()
				if err := os.WriteFile(filepath.Join(out, "marker"), []byte("HOST-SECRET\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(wd, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(out, filepath.Join(wd, "peer-in")); err != nil {
					t.Fatal(err)
				}
				return out
			},
			command: "cat peer-in/marker || echo NOT-SEEN",
			want:    []string{"NOT-SEEN"},
			notWant: []string{"HOST-SECRET"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			homeDir, base := t.TempDir(), t.TempDir()
			proj := shellAgent(t, homeDir, base, "sealed", "bash", c.command, c.extra)
			skipUnlessTier(t, homeDir, proj)
			wd := filepath.Join(base, "wd")
			kept := c.setup(t, wd)
			before := listing(t, kept)
			r := runMur(t, homeDir, proj, nil, "run", "--json", "--workdir", wd, "--task", "go")
			if r.Code != 0 {
				t.Fatalf("run: %+v", r)
			}
			_, log := shellLine(t, parseReady(t, r.Stdout).RecordsDir)
			for _, w := range c.want {
				if !strings.Contains(log, w) {
					t.Errorf("the command's log lacks %q:\n%s", w, log)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(log, w) {
					t.Errorf("the command's log holds %q:\n%s", w, log)
				}
			}
			if after := listing(t, kept); after != before {
				t.Errorf("%s changed:\nbefore %s\nafter  %s", kept, before, after)
			}
		})
	}
}

// listing is a folder's names, modes and contents, one line each.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		info, _ := e.Info()
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name() + " " + info.Mode().String() + " " + string(data) + "\n")
	}
	return b.String()
}
