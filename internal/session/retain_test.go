package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
)

// A session that has begun (New returned) but has no running record yet is
// never retention's, however far past max_sessions; once Closed it is.
func TestRetainSparesABegunSession(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	starting, err := New(Config{Home: homeDir, ManifestDir: proj, Name: "local/a", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer starting.Close()
	if !Begun(home.Sessions(homeDir), starting.ID) {
		t.Fatal("a session New returned is not Begun")
	}
	current, err := New(Config{Home: homeDir, ManifestDir: proj, Name: "local/a", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer current.Close()
	removed, ws := ApplyRetain(current.ProjectRecordsDir, current.ID, Retain{MaxSessions: 1}, current.RunningDir, time.Now())
	if len(removed) != 0 || len(ws) != 0 {
		t.Fatalf("retain removed %v (%v) while a session was starting", removed, ws)
	}
	if _, err := os.Stat(starting.RecordsDir); err != nil {
		t.Fatalf("the starting session's records dir is gone: %v", err)
	}
	starting.Close()
	if Begun(home.Sessions(homeDir), starting.ID) {
		t.Error("a closed session is still Begun")
	}
	removed, _ = ApplyRetain(current.ProjectRecordsDir, current.ID, Retain{MaxSessions: 1}, current.RunningDir, time.Now())
	if len(removed) != 1 || removed[0] != starting.ID {
		t.Errorf("after it ended, retain removed %v, want %s", removed, starting.ID)
	}
	if entries, _ := os.ReadDir(current.ProjectRecordsDir); len(entries) != 1 || entries[0].Name() != current.ID {
		t.Errorf("left in the project records: %v", entries)
	}
}

// The mark is a lock, not a file: a session whose process died (SIGKILL)
// leaves its file, and is not Begun.
func TestBegunIsALockThatDiesWithItsProcess(t *testing.T) {
	if os.Getenv("MUR_BEGUN_CHILD") != "" {
		if _, err := markBegun(os.Getenv("MUR_BEGUN_CHILD")); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Hour)
	}
	sessions := t.TempDir()
	id := ids.New(ids.Session)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBegunIsALockThatDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "MUR_BEGUN_CHILD="+filepath.Join(sessions, id))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q %v", buf, err)
	}
	if !Begun(sessions, id) {
		t.Error("a live process's mark is not Begun")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(sessions, id, beganFile)); err != nil {
		t.Fatalf("the mark file should outlive its process: %v", err)
	}
	if Begun(sessions, id) {
		t.Error("a killed process's mark is still Begun")
	}
	if Begun(sessions, "not-an-id") || Begun(sessions, ids.New(ids.Session)) {
		t.Error("an unknown session is Begun")
	}
}
