package hostapi

import (
	"net/url"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/manifest"
)

// FuzzPeerEndpoint: whatever a guest passes as a peer URL, PeerEndpoint never
// panics, and what it accepts is an http(s) URL without user information
// whose grant entry parses and names the very host and port dialled.
func FuzzPeerEndpoint(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1:4000", "http://127.0.0.1:4000", "https://peer.example/a2a", "http://[::1]:9000/x?y=1",
		"ftp://h", "http://user@h", "http://", "", " ", "h:0", "h:99999", "http://h#frag", "HTTP://H:80",
		"http://h:80@evil", "http://evil\\@h", "//h", "http:h", "http://h%2f:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, entry, err := PeerEndpoint(s)
		if err != nil {
			return
		}
		u, perr := url.Parse(ep)
		if perr != nil {
			t.Fatalf("accepted %q but the endpoint %q does not parse: %v", s, ep, perr)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil {
			t.Fatalf("accepted %q as %q", s, ep)
		}
		ne, nerr := manifest.ParseNetEntry(entry)
		if nerr != nil {
			t.Fatalf("accepted %q but its entry %q does not parse: %v", s, entry, nerr)
		}
		// (A trailing dot names the same DNS host; entries drop it.)
		if !strings.EqualFold(strings.TrimSuffix(ne.Host, "."), strings.TrimSuffix(u.Hostname(), ".")) || ne.Scheme != u.Scheme {
			t.Fatalf("%q: entry %q names %s://%s, the endpoint dials %s://%s", s, entry, ne.Scheme, ne.Host, u.Scheme, u.Hostname())
		}
		if p := u.Port(); p != "" && ne.Port == 0 {
			t.Fatalf("%q: endpoint port %s, entry without port", s, p)
		}
	})
}
