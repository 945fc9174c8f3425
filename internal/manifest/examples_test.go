package manifest

import (
	"path/filepath"
	"reflect"
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
