package launch

import (
	"encoding/json"
	"testing"

	"github.com/murmur-go/murmur/internal/trace"
)

// TestRestrictionByTier walks the spec's table: the child's tier gives
// parent_workdir.restriction.
func TestRestrictionByTier(t *testing.T) {
	for tier, want := range map[string]string{"sealed": "absent", "scoped": "enforced", "advisory": "advisory"} {
		if got := Restriction(tier); got != want {
			t.Errorf("Restriction(%s) = %s, want %s", tier, got, want)
		}
	}
}

func TestWithParentWorkdir(t *testing.T) {
	snap := &trace.Snapshot{Source: "/p", Files: 2, Directories: 1, Symlinks: 1, Bytes: 9}
	for _, tc := range []struct{ in, want string }{
		{`{"capsule":{"x":1},"containment":{"achieved":"scoped"}}`,
			`{"capsule":{"x":1},"containment":{"achieved":"scoped"},"parent_workdir":{"source":"/p","files":2,"directories":1,"symlinks":1,"bytes":9,"skipped":[],"restriction":"enforced"}}`},
		{`{}`, `{"parent_workdir":{"source":"/p","files":2,"directories":1,"symlinks":1,"bytes":9,"skipped":[],"restriction":"enforced"}}`},
	} {
		got := withParentWorkdir(json.RawMessage(tc.in), snap, "scoped")
		if string(got) != tc.want || !json.Valid(got) {
			t.Errorf("withParentWorkdir(%s) =\n %s\nwant\n %s", tc.in, got, tc.want)
		}
	}
	if got := withParentWorkdir(json.RawMessage(`{"a":1}`), nil, "sealed"); string(got) != `{"a":1}` {
		t.Errorf("no snapshot changed the grants: %s", got)
	}
}
