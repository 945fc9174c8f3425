package testbin

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"testing"
)

// ThrowawayUser adds a local system user (no home, no login shell) for the
// test and deletes it when the test ends, returning its uid and gid: the
// "another local user" of the tests that check what such a user cannot
// reach. It skips the test where users cannot be added (not root, or no
// useradd), saying why.
func ThrowawayUser(t testing.TB) (uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to add a throwaway user")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd is not installed")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "murt" + hex.EncodeToString(b[:])
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := strconv.Atoi(u.Uid)
	g, _ := strconv.Atoi(u.Gid)
	return uint32(a), uint32(g)
}
