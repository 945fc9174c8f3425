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
