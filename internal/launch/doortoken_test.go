package launch

import (
	"testing"

	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// TestOperatorToken: a delegated child's door takes the token its parent
// handed in the approval line; a session launched with none (by hand, or
// a parent line without door_token) makes its own at launch.
func TestOperatorToken(t *testing.T) {
	handed, _ := doorapi.NewOperatorToken()
	for _, c := range []struct {
		name     string
		launched *delegate.Launched
		want     string // "" for a fresh token
	}{
		{"started by hand", nil, ""},
		{"a line with no door_token", &delegate.Launched{ParentTier: "sealed"}, ""},
		{"a line with door_token", &delegate.Launched{ParentTier: "sealed", DoorToken: handed}, handed},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &spawnWiring{launched: c.launched}
			a, err := w.operatorToken()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := w.operatorToken()
			switch {
			case c.want != "" && (a != c.want || b != c.want):
				t.Errorf("got %q and %q, want the handed token", a, b)
			case c.want == "" && (!doorapi.IsOperatorToken(a) || a == b || a == handed):
				t.Errorf("fresh tokens %q %q", a, b)
			}
		})
	}
}
