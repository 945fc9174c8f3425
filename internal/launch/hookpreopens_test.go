package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// A hook whose view is the whole work folder sees peer-in/ through the
// read-only preopens "peer-in" and "/peer-in", as a tool does; one under a
// filesystem.scope sees only its folder. peer-in/ is made before the hooks
// are instantiated, so a fresh work folder has it for them.
func TestHookPreopensPeerIn(t *testing.T) {
	sub := "notes"
	for _, tc := range []struct {
		name      string
		fetch     []string // capabilities.peer_fetch.allow
		scope     *string
		wantPeer  bool
		wantMount string // the host folder of "."
	}{
		{name: "whole work folder, peer_fetch", fetch: []string{"127.0.0.1"}, wantPeer: true},
		{name: "scoped, peer_fetch", fetch: []string{"127.0.0.1"}, scope: &sub, wantMount: sub},
		{name: "whole work folder, no peer_fetch, no peer-in", wantPeer: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd, rt := t.TempDir(), t.TempDir()
			p := &Plan{Grants: manifest.Grants{Capsule: manifest.GrantSet{PeerFetchAllow: tc.fetch}}}
			if err := makePeerIn(p, wd); err != nil {
				t.Fatal(err)
			}
			peerIn := filepath.Join(wd, grant.PeerInMount)
			if st, err := os.Stat(peerIn); (err == nil) != (len(tc.fetch) > 0) || (err == nil && st.Mode().Perm() != 0o555) {
				t.Fatalf("peer-in after makePeerIn: %v %v", st, err)
			}
			pre, err := hookPreopens(wd, rt, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			byGuest := map[string]wasmhost.Preopen{}
			for _, o := range pre {
				byGuest[o.GuestPath] = o
			}
			if o := byGuest["."]; o.HostDir != filepath.Join(wd, tc.wantMount) || o.ReadOnly {
				t.Errorf(`"." is %+v, want %s read-write`, o, filepath.Join(wd, tc.wantMount))
			}
			for _, g := range []string{"peer-in", "/peer-in"} {
				o, ok := byGuest[g]
				if ok != tc.wantPeer || (ok && (o.HostDir != peerIn || !o.ReadOnly)) {
					t.Errorf("%q: %+v (present %v), want present %v, %s read-only", g, o, ok, tc.wantPeer, peerIn)
				}
			}
		})
	}
}
