package roost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/envelope"
)

// TestSpecWords holds every sentence the daemon prints or answers against
// the specification text itself (shared/spec beside the work tree), so a
// drifted word fails here before a conformance suite finds it.
func TestSpecWords(t *testing.T) {
	var spec []byte
	for _, p := range []string{
		filepath.Join("..", "..", "..", "shared", "spec", "roost-and-delegation.txt"),
		"/work/shared/spec/roost-and-delegation.txt",
	} {
		if b, err := os.ReadFile(p); err == nil {
			spec = b
			break
		}
	}
	if spec == nil {
		t.Skip("the specification text is not beside this work tree")
	}
	text := string(spec)
	for _, m := range []string{
		msgIdentity,
		msgApprovalExpired,
		msgApprovalReplayed,
		msgApprovalCoordinates("local/worker-a@0.1.0", "local/worker-b@0.1.0"),
		msgApprovalBytes("local/worker-a@0.1.0", "…", "…"),
		msgDepth(3),
		msgConcurrency(2, 2),
		msgCeiling(3, 3),
		msgNotInParentAllow("local/worker-a"),
		msgNotInSpawnAllow("local/worker-a"),
		`"error": "` + msgSessionNotFound + `"`,
		lineCensus(0, "/home/you/.murmur/running", 0, 0.1, 0, 0),
		lineListening("127.0.0.1:7700"),
		lineCeiling(64),
		lineCannotCount("/home/you/.murmur/running: "),
		"the home directory could not be resolved: ",
		lineUnknownArgument("--max-total"),
		(&envelope.Refusal{Key: envelope.KeyNetworkAllow, Entry: "api.example.com"}).Error(),
	} {
		if !strings.Contains(text, m) {
			t.Errorf("not word for word in the specification: %q", m)
		}
	}
}
