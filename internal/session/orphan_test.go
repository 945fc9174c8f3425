package session

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/ids"
)

func TestRemoveOrphan(t *testing.T) {
	dir := t.TempDir()
	held := ids.New(ids.Session)
	lock, err := markBegun(filepath.Join(dir, held))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	dead := ids.New(ids.Session)
	os.MkdirAll(filepath.Join(dir, dead, "runtime"), 0o700)

	for _, tc := range []struct {
		id      string
		removed bool
	}{
		{held, false},
		{dead, true},
		{dead, false}, // already gone
		{"not-a-session", false},
		{ids.New(ids.Session), false}, // never existed
	} {
		got, err := RemoveOrphan(dir, tc.id)
		if err != nil || got != tc.removed {
			t.Errorf("RemoveOrphan(%s) = %v, %v; want %v", tc.id, got, err, tc.removed)
		}
	}
	if !Begun(dir, held) {
		t.Error("the held session is no longer begun")
	}
}

// A session starting while RemoveOrphan sweeps its dir either keeps its lock
// or begins again: it never ends up holding a lock on a removed file.
func TestRemoveOrphanRacingMarkBegun(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 200; i++ {
		id := ids.New(ids.Session)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			RemoveOrphan(dir, id)
		}()
		f, err := markBegun(filepath.Join(dir, id))
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if !samePath(f, filepath.Join(dir, id, beganFile)) || !Begun(dir, id) {
			t.Fatalf("round %d: the session's lock is not its dir's", i)
		}
		f.Close()
	}
}
