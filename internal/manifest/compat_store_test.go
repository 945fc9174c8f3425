package manifest_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

// The published tool manifest (runtime: wasm, its component in
// requires_files) packs with mur build's packer, publishes into a real
// store, and is found there through the published capsule manifest's bare
// artifact name.
func TestPublishedToolThroughTheStore(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "published", "jsonl-line-count", "murmur.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "murmur.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	component := append([]byte{0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00}, "body"...)
	if err := os.WriteFile(filepath.Join(dir, "jsonl_line_count.wasm"), component, 0o644); err != nil {
		t.Fatal(err)
	}
	built, err := store.Pack(dir)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	if !reflect.DeepEqual(built.Files, []string{"jsonl_line_count.wasm", "murmur.yaml"}) || built.Payload != "jsonl_line_count.wasm" ||
		built.FileName != "jsonl-line-count-0.1.0.mur.zip" {
		t.Errorf("packed %v payload %q as %s", built.Files, built.Payload, built.FileName)
	}
	st := store.At(filepath.Join(t.TempDir(), "artifacts"))
	if _, err := st.Publish(built.Zip, false); err != nil {
		t.Fatalf("Publish: %v", err)
	}

	capsule, err := manifest.Load(filepath.Join("testdata", "published", "line-counter", "murmur.yaml"), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := capsule.Artifacts[0]
	r, err := st.Resolve(a.Name, a.Version, manifest.Options{SkipSecrets: true})
	if err != nil {
		t.Fatalf("Resolve(%s@%s): %v", a.Name, a.Version, err)
	}
	if r.Runtime != manifest.RuntimeTool || r.Manifest.DeclaredRuntime != "wasm" || r.Manifest.RefuseNative() != nil {
		t.Errorf("resolved %s as %q (declared %q)", r.Ref(), r.Runtime, r.Manifest.DeclaredRuntime)
	}
	if file, data, ok := r.Archive.Payload(); !ok || file != "jsonl_line_count.wasm" || !strings.HasSuffix(string(data), "body") {
		t.Errorf("payload %q %v", file, ok)
	}
}
