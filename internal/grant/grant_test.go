package grant

import (
	"maps"
	"testing"

	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
)

func TestEnvOnlyAllowedAndIdentity(t *testing.T) {
	host := map[string]string{"LANG": "C", "SECRET": "x", "MURMUR_SESSION_ID": "spoofed", "MURMUR_CAPSULE_URL": "spoofed"}
	lookup := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	identity := map[string]string{"MURMUR_SESSION_ID": "ses_1", "MURMUR_CAPSULE_NAME": "local/a",
		"MURMUR_CAPSULE_VERSION": "1.0.0", "MURMUR_RUNTIME_DIR": "murmur-runtime"}
	tests := []struct {
		name  string
		url   string
		allow []string
		want  map[string]string
	}{
		{"script capsule", "", []string{"LANG", "UNSET", "MURMUR_SESSION_ID", "MURMUR_CAPSULE_URL", "LANG"},
			map[string]string{"LANG": "C"}},
		{"nothing allowed", "", nil, map[string]string{}},
		{"with a URL", "127.0.0.1:4000", []string{"SECRET"},
			map[string]string{"SECRET": "x", "MURMUR_CAPSULE_URL": "127.0.0.1:4000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &session.Session{ID: "ses_1", Name: "local/a", Version: "1.0.0", CapsuleURL: tc.url}
			want := maps.Clone(tc.want)
			maps.Copy(want, identity)
			if got := Env(s, tc.allow, lookup); !maps.Equal(got, want) {
				t.Errorf("Env = %v, want %v", got, want)
			}
		})
	}
}

func TestPreopensAndLimits(t *testing.T) {
	p := Preopens("/w", "/r")
	if p[0].GuestPath != "/" || p[0].HostDir != "/w" || p[0].ReadOnly {
		t.Errorf("first preopen must be the work folder as /: %+v", p[0])
	}
	for _, x := range p {
		if (x.HostDir == "/r") != x.ReadOnly {
			t.Errorf("only the runtime dir is read-only: %+v", x)
		}
	}
	l := Limits(manifest.EffLimits{DeadlineSeconds: 3, MemoryBytes: 1 << 20, TableElements: 7, Instances: 2})
	if l.Deadline.Seconds() != 3 || l.MemoryBytes != 1<<20 || l.TableElements != 7 || l.Instances != 2 {
		t.Errorf("Limits = %+v", l)
	}
}

// The runtime's collector (MURMUR_OTEL_ENDPOINT) never reaches a component,
// even when env.allow names it.
func TestEnvNeverHandsOnTheCollector(t *testing.T) {
	sess := &session.Session{ID: "ses_x", Name: "local/x", Version: "0.1.0"}
	env := Env(sess, []string{trace.EnvCollector, "KEEP"}, func(n string) (string, bool) { return "v-" + n, true })
	if _, ok := env[trace.EnvCollector]; ok || env["KEEP"] != "v-KEEP" {
		t.Fatalf("env %v", env)
	}
}

// A formation member with callees hands every component
// MURMUR_FORMATION_PEERS, runtime-owned: env.allow neither supplies it
// (for a member without callees) nor displaces it.
func TestEnvFormationPeers(t *testing.T) {
	lookup := func(n string) (string, bool) { return "spoofed", true }
	two := formation.NewCallees(&formation.Line1{Calls: []formation.Call{{Name: "writer", Token: "a"}, {Name: "critic", Token: "b"}}}, nil, nil)
	none := formation.NewCallees(&formation.Line1{Calls: []formation.Call{}}, nil, nil)
	for _, c := range []struct {
		name    string
		callees *formation.Callees
		want    string // "" is absent
	}{
		{"callees", two, "writer=http://writer.formation.invalid critic=http://critic.formation.invalid"},
		{"no callees", none, ""},
		{"no member", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sess := &session.Session{ID: "ses_x", Name: "local/x", Version: "0.1.0", Callees: c.callees}
			env := Env(sess, []string{formation.EnvPeers}, lookup)
			got, ok := env[formation.EnvPeers]
			if ok != (c.want != "") || got != c.want {
				t.Fatalf("%s = %q (set %v), want %q", formation.EnvPeers, got, ok, c.want)
			}
		})
	}
}
