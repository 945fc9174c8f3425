package formation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

const twoMembers = `roster_version: 1
members:
  - name: lead
    capsule: local/lead
    version: "0.1.0"
    entry: true
  - name: worker
    capsule: worker
    version: 1.10
reachability:
  - from: lead
    to: [worker]
`

func TestParseRoster(t *testing.T) {
	r, err := Parse([]byte(twoMembers), "/p/roster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if len(r.Members) != 2 || r.Members[1].Full != "local/worker" || r.Members[1].Version != "1.10" || !r.Members[0].Entry || r.Entry() != 0 {
		t.Fatalf("members = %+v", r.Members)
	}
	if len(r.Rules) != 1 || r.Rules[0].From != "lead" || r.Rules[0].To[0] != "worker" {
		t.Fatalf("rules = %+v", r.Rules)
	}
}

// TestRosterFaults: every fault of admission checks 1–5 with its code and
// the words that locate it.
func TestRosterFaults(t *testing.T) {
	m := func(extra string) string {
		return "roster_version: 1\nmembers:\n  - name: lead\n    capsule: lead\n    version: \"1\"\n    entry: true\n  - name: w\n    capsule: w\n    version: \"1\"\n" + extra
	}
	cases := []struct{ name, src, code, has string }{
		{"not yaml", "members: [", "E-ROS-001", "is not YAML"},
		{"empty", "", "E-ROS-001", "is empty"},
		{"top list", "- a\n", "E-ROS-001", "top level: expected a mapping"},
		{"unknown top key", m("reachabilty: all\n"), "E-ROS-001", "reachabilty: unknown key"},
		{"unknown member key", strings.Replace(m(""), "entry: true", "entry: true\n    env: x", 1), "E-ROS-001", "members[0].env (member 'lead'): unknown key"},
		{"unknown rule key", m("reachability:\n  - from: lead\n    to: [w]\n    via: x\n"), "E-ROS-001", "reachability[0].via: unknown key"},
		{"no version", strings.Replace(m(""), "roster_version: 1\n", "", 1), "E-ROS-001", "roster_version: missing"},
		{"version 2", strings.Replace(m(""), "roster_version: 1", "roster_version: 2", 1), "E-ROS-001", "roster version 2 is not supported"},
		{"version string", strings.Replace(m(""), "roster_version: 1", "roster_version: \"1\"", 1), "E-ROS-001", "expected the integer 1"},
		{"no members", "roster_version: 1\n", "E-ROS-001", "members: missing"},
		{"members empty", "roster_version: 1\nmembers: []\n", "E-ROS-001", "the list is empty"},
		{"members null is absent", "roster_version: 1\nmembers:\n", "E-ROS-001", "members: missing"},
		{"too many", "roster_version: 1\nmembers:\n" + strings.Repeat("  - {name: a, capsule: a, version: \"1\"}\n", 65), "E-ROS-001", "at most 64"},
		{"bad name", strings.Replace(m(""), "name: w", "name: W", 1), "E-ROS-001", "members[1].name: \"W\" is not a member name"},
		{"missing capsule", strings.Replace(m(""), "    capsule: w\n", "", 1), "E-ROS-001", "members[1].capsule (member 'w'): missing"},
		{"bad capsule", strings.Replace(m(""), "capsule: w", "capsule: a/b/c", 1), "E-ROS-001", "members[1].capsule (member 'w'): \"a/b/c\" is not an artifact name"},
		{"blank version", strings.Replace(m(""), "    version: \"1\"\n", "    version: \" \"\n", 1), "E-ROS-001", "members[0].version (member 'lead'): the version is blank"},
		{"empty version is missing", strings.Replace(m(""), "    version: \"1\"\n", "    version:\n", 1), "E-ROS-001", "members[0].version (member 'lead'): missing"},
		{"latest", strings.Replace(m(""), "    version: \"1\"\n", "    version: latest\n", 1), "E-ROS-001", "reserved version"},
		{"entry not bool", strings.Replace(m(""), "entry: true", "entry: yes please", 1), "E-ROS-001", "members[0].entry (member 'lead'): expected true or false"},
		{"reach word", m("reachability: everyone\n"), "E-ROS-001", "reachability: expected all or a list of rules"},
		{"rule no from", m("reachability:\n  - to: [w]\n"), "E-ROS-001", "reachability[0].from: missing"},
		{"rule empty to", m("reachability:\n  - from: lead\n    to: []\n"), "E-ROS-001", "reachability[0].to: empty"},
		{"rule to scalar", m("reachability:\n  - from: lead\n    to: w\n"), "E-ROS-001", "reachability[0].to: expected a list"},
		{"rule self", m("reachability:\n  - from: w\n    to: [lead2, w]\n"), "E-ROS-001", "reachability[0].to[1]: 'w' may not call itself"},
		{"duplicate key", strings.Replace(m(""), "roster_version: 1\n", "roster_version: 1\nroster_version: 1\n", 1), "E-ROS-001", "the key appears twice"},
		{"dup name", strings.Replace(m(""), "name: w", "name: lead", 1), "E-ROS-003", "member name 'lead' is used twice (members[0] and members[1])"},
		{"no entry", strings.Replace(m(""), "entry: true", "entry: false", 1), "E-ROS-002", "it has none"},
		{"two entries", m("") + "    entry: true\n", "E-ROS-002", "'lead' and 'w' both claim it"},
		{"unknown from", m("reachability:\n  - from: x\n    to: [w]\n"), "E-ROS-004", "reachability[0] (from 'x') names 'x', which is no member"},
		{"unknown to", m("reachability:\n  - from: lead\n    to: [w, y]\n"), "E-ROS-004", "reachability[0] (from 'lead') names 'y'"},
		{"calls entry", m("reachability:\n  - from: lead\n    to: [w]\n  - from: w\n    to: [lead]\n"), "E-ROS-008", "reachability[1] lets 'w' call 'lead', the entry member"},
		// Order: names before the entry rule, 002 before 004.
		{"003 before 002", strings.Replace(strings.Replace(m(""), "name: w", "name: lead", 1), "entry: true", "entry: false", 1), "E-ROS-003", ""},
		{"002 before 004", strings.Replace(m("reachability:\n  - from: x\n    to: [w]\n"), "entry: true", "entry: false", 1), "E-ROS-002", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.src), "/p/roster.yaml")
			if err == nil {
				err = r.Check()
			}
			if diag.Code(err) != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
			if !strings.HasPrefix(err.(*diag.Diagnostic).Message, "/p/roster.yaml: ") || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("err = %v, want it to hold %q", err, c.has)
			}
		})
	}
}

func TestRosterNoEdges(t *testing.T) {
	for _, reach := range []string{"", "reachability:\n", "reachability: []\n", "reachability: all\n"} {
		r, err := Parse([]byte("roster_version: 1\nmembers:\n  - {name: a, capsule: a, version: \"1\", entry: true}\n"+reach), "f")
		if err != nil {
			t.Fatalf("%q: %v", reach, err)
		}
		if len(r.Rules) != 0 || r.All != (reach == "reachability: all\n") {
			t.Fatalf("%q: %+v", reach, r)
		}
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(twoMembers), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		dir:                               filepath.Join(real, FileName),
		link:                              filepath.Join(real, FileName),
		filepath.Join(link, "other.yaml"): filepath.Join(real, "other.yaml"),
	} {
		f, d, err := Locate(arg)
		if err != nil || f != want || d != real {
			t.Errorf("Locate(%s) = %s, %s, %v; want %s", arg, f, d, err, want)
		}
	}
	if _, err := Load(dir); diag.Code(err) != "E-ROS-001" || !strings.Contains(err.Error(), "roster.yaml: cannot be read: no such file or directory") {
		t.Fatalf("Load of a folder without a roster: %v", err)
	}
	r, err := Load(filepath.Join(link, "other.yaml"))
	if err != nil || r.Dir != real {
		t.Fatalf("Load: %+v, %v", r, err)
	}
}

func FuzzParseRoster(f *testing.F) {
	f.Add([]byte(twoMembers))
	f.Add([]byte("roster_version: 1\nmembers:\n  - {name: a, capsule: a, version: 1.0, entry: true}\nreachability: all\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("roster_version: 1\nmembers: &m\n  - name: a\n    <<: *m\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data, "f")
		if err != nil {
			if diag.Code(err) != "E-ROS-001" {
				t.Fatalf("code %s", diag.Code(err))
			}
			return
		}
		if len(r.Members) == 0 || len(r.Members) > MaxMembers {
			t.Fatalf("%d members admitted", len(r.Members))
		}
		for _, m := range r.Members {
			if !ValidMemberName(m.Name) || m.Full == "" || strings.TrimSpace(m.Version) == "" {
				t.Fatalf("bad member %+v", m)
			}
		}
		if err := r.Check(); err != nil && !strings.HasPrefix(diag.Code(err), "E-ROS-") {
			t.Fatalf("Check: %v", err)
		}
	})
}
