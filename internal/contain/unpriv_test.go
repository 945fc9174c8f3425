package contain_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// unprivUser is the account the suite creates to run itself unprivileged.
const unprivUser = "murmur-contain-test"

// TestUnprivileged runs the tier tests again as an unprivileged user, when
// this test runs as root and can create one (useradd, runuser).
func TestUnprivileged(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root to create the unprivileged user")
	}
	for _, tool := range []string{"useradd", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on this machine", tool)
		}
	}
	if exec.Command("id", unprivUser).Run() != nil {
		if b, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", unprivUser).CombinedOutput(); err != nil {
			t.Skipf("cannot create %s: %v %s", unprivUser, err, b)
		}
	}
	// The user must reach the binary: copy it into a directory it can
	// traverse.
	dir, err := os.MkdirTemp("", "contain-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	bin := filepath.Join(dir, "contain.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	suid := setuidCopy(t, self, dir)
	c := exec.Command("runuser", "-u", unprivUser, "--", bin,
		"-test.run", "^(TestProbe|TestNormalCommands|TestEscapes|TestGrantsOpen|TestNetNS|TestNetNSListenersClosed|TestKillEscapers|TestResourcePlane|TestPlanRefusals|TestTmpfsWorkFolder)$", "-test.v")
	c.Env = append(os.Environ(), suidEnv+"="+suid)
	out, err := c.CombinedOutput()
	t.Logf("as %s:\n%s", unprivUser, out)
	if err != nil {
		t.Fatalf("the tier tests failed as %s: %v", unprivUser, err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
