package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

func TestExampleManifests(t *testing.T) {
	opts := Options{LookupEnv: env(map[string]string{"ANTHROPIC_API_KEY": "k"})}

	m, err := Load(filepath.Join("testdata", "agent-capsule.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	g, ws := m.EffectiveGrants()
	if !m.IsAgent() || m.Name != "local/my-agent" || m.Inference.DriverArtifact != "murmur/driver-anthropic" ||
		len(ws) != 0 || len(m.Warnings) != 0 || !reflect.DeepEqual(g.Artifacts[0].Grants.ShellAllow, []string{"bash"}) {
		t.Errorf("agent capsule: %+v %s %v", m, mustJSON(t, g), m.Warnings)
	}

	m, err = Load(filepath.Join("testdata", "script-capsule.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	g, _ = m.EffectiveGrants()
	if m.IsAgent() || len(m.Warnings) != 0 || !reflect.DeepEqual(g.StateStores, []string{"word-count"}) ||
		*g.Capsule.FilesystemScope != "data" || g.Capsule.Limits.DeadlineSeconds != 60 || g.Capsule.Limits.HookDeadlineSeconds != 60 ||
		m.Artifacts[0].Config["style"] != "terse" {
		t.Errorf("script capsule: %+v %s", m, mustJSON(t, g))
	}

	m, err = Load(filepath.Join("testdata", "tool-artifact.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.RuntimeKind() != RuntimeTool || m.Name != "acme/summarise" || !reflect.DeepEqual(m.RequiresFiles, []string{"schemas/input.json"}) {
		t.Errorf("tool artifact: %+v", m)
	}

	m, err = Load(filepath.Join("testdata", "typical.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	g, ws = m.EffectiveGrants()
	if len(ws) != 0 || len(g.Artifacts) != 3 || g.Artifacts[2].Grants.Limits.HookDeadlineSeconds != 10 ||
		!reflect.DeepEqual(g.Artifacts[1].Grants.NetworkAllow, []string{"docs.example.com", "https://api.github.com"}) ||
		!reflect.DeepEqual(g.StateStores, []string{"audit"}) {
		t.Errorf("typical: %s %v", mustJSON(t, g), ws)
	}
	// mur-roost loads the same file with no provider key in its environment.
	if _, err := Load(filepath.Join("testdata", "typical.yaml"), Options{SkipSecrets: true, LookupEnv: env(nil)}); err != nil {
		t.Errorf("SkipSecrets load: %v", err)
	}
}

// mur-roost parses and reads manifests from many request goroutines at once:
// Parse shares no state, and EffectiveGrants only reads the manifest.
func TestConcurrentUse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "typical.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shared, err := Parse(data, "", Options{SkipSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(t, func() Grants { g, _ := shared.EffectiveGrants(); return g }())
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				m, err := Parse(data, "", Options{SkipSecrets: true})
				if err != nil {
					errs <- err.Error()
					return
				}
				g1, _ := m.EffectiveGrants()
				g2, _ := shared.EffectiveGrants()
				b1, _ := json.Marshal(g1)
				b2, _ := json.Marshal(g2)
				if string(b1) != want || string(b2) != want {
					errs <- "grants differ"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
