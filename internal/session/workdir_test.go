package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

func TestCheckWorkdir(t *testing.T) {
	base := t.TempDir()
	homeDir := filepath.Join(base, "home")
	proj := filepath.Join(base, "proj")
	os.MkdirAll(filepath.Join(homeDir, ".murmur", "compiled"), 0o700)
	os.MkdirAll(filepath.Join(proj, ".murmur"), 0o700)
	link := filepath.Join(base, "link-to-home")
	os.Symlink(homeDir, link)
	tests := []struct {
		name, dir string
		bad       bool
	}{
		{"root", "/", true},
		{"etc", "/etc", true},
		{"inside usr", "/usr/local/x", true},
		{"tmp itself", "/tmp", true},
		{"home", homeDir, true},
		{"home through a symlink", link, true},
		{".murmur", filepath.Join(homeDir, ".murmur"), true},
		{"inside .murmur", filepath.Join(homeDir, ".murmur", "sessions", "x"), true},
		{"the project dir", proj, true},
		{"a parent of the project", base, true},
		{"the default", filepath.Join(proj, "workdir", "ses_x"), false},
		{"a folder in home", filepath.Join(homeDir, "work"), false},
		{"a new tmp dir", filepath.Join(base, "wd"), false},
	}
	for _, tc := range tests {
		err := CheckWorkdir(tc.dir, homeDir, true, proj)
		if (err != nil) != tc.bad || (err != nil && diag.Code(err) != "E-RUN-056") {
			t.Errorf("%s (%s): %v, want refused=%v", tc.name, tc.dir, err, tc.bad)
		}
	}
}

// A work folder that is or holds the directory of a runtime binary (as
// given or with links resolved) is refused; one beside it or inside it is
// not (issue 22 item 2).
func TestCheckRuntimeBinaries(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	os.MkdirAll(filepath.Join(repo, "bin"), 0o755)
	os.WriteFile(filepath.Join(repo, "bin", "mur"), nil, 0o755)
	os.MkdirAll(filepath.Join(base, "usr-local-bin"), 0o755)
	link := filepath.Join(base, "usr-local-bin", "mur")
	os.Symlink(filepath.Join(repo, "bin", "mur"), link)
	for _, tc := range []struct {
		workdir string
		bins    []string
		refused bool
	}{
		{repo, []string{filepath.Join(repo, "bin", "mur")}, true},
		{filepath.Join(repo, "bin"), []string{filepath.Join(repo, "bin", "mur")}, true},
		{repo, []string{link}, true}, // mur run through a link into the repository
		{filepath.Join(repo, "src"), []string{filepath.Join(repo, "bin", "mur")}, false},
		{filepath.Join(repo, "bin", "work"), []string{filepath.Join(repo, "bin", "mur")}, false},
		{repo, []string{"", "/usr/local/bin/mur"}, false},
	} {
		err := CheckRuntimeBinaries(tc.workdir, tc.bins)
		if (err != nil) != tc.refused || (err != nil && diag.Code(err) != "E-RUN-056") {
			t.Errorf("CheckRuntimeBinaries(%s, %v) = %v; refused %v", tc.workdir, tc.bins, err, tc.refused)
		}
	}
}
