// Command mur-floor is the warm-run benchmark anchor (issue 31): the honest
// lower bound of a warm `mur run` of examples/hello-script. It is the same
// engine (internal/wasmhost: wasmtime, its settings, its MAC-checked compile
// cache), the same two components and the same guest calls, and nothing
// else: no manifest, store, session records, trace, sandbox or CLI. It loads
// the script capsule and its tool from the compile cache, runs the capsule's
// murmur:capsule/run once with the work folder and the runtime folder
// preopened as mur preopens them, and answers the capsule's one
// murmur:tool-registry invoke by instantiating the tool and calling its run.
//
//	mur-floor -cache DIR CAPSULE.wasm TOOL.wasm
//
// The first run compiles both components into DIR (seconds); every later run
// is a cache hit named by the file's identity (path, size, mtime), so, like a
// warm `mur run`, it neither reads nor hashes an unchanged component.
// scripts/bench-warm-run.sh alternates it with `mur run` (docs/benchmarks.md).
//
// It uses internal/wasmhost rather than wasmtime-go so that the floor moves
// with the engine: a cost the engine adds for every caller (the cache's MAC,
// the memory images, the linker) is the floor's too, and what is left between
// the two is what mur adds.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mur-floor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 4 || args[0] != "-cache" {
		return fmt.Errorf("usage: mur-floor -cache DIR CAPSULE.wasm TOOL.wasm")
	}
	cacheDir, capsulePath, toolPath := args[1], args[2], args[3]
	eng, err := wasmhost.NewEngine(wasmhost.Config{CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer eng.Close()
	capsule, err := load(eng, capsulePath)
	if err != nil {
		return err
	}
	defer capsule.Close()
	tool, err := load(eng, toolPath)
	if err != nil {
		return err
	}
	defer tool.Close()

	work, err := os.MkdirTemp("", "mur-floor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	workdir, runtimeDir := filepath.Join(work, "work"), filepath.Join(work, "runtime")
	for _, d := range []string{filepath.Join(workdir, "out"), runtimeDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(runtimeDir, "task.md"), []byte("hello\n"), 0o600); err != nil {
		return err
	}

	ctx := context.Background()
	host := wasmhost.NewHost()
	wit.GrantToolRegistry(host, func(ctx context.Context, _ string, in wit.ToolInput) (wit.ToolResult, error) {
		inst, err := eng.Instantiate(ctx, tool, config(nil, nil))
		if err != nil {
			return wit.ToolResult{}, err
		}
		defer inst.Close()
		return wit.CallToolRun(ctx, inst, in)
	})
	rc := config(host, grant.Preopens(workdir, runtimeDir))
	wit.ChooseIO(capsule, &rc)
	inst, err := eng.Instantiate(ctx, capsule, rc)
	if err != nil {
		return err
	}
	defer inst.Close()
	if err := wit.CallCapsuleRun(ctx, inst); err != nil {
		return err
	}
	_, err = os.Stat(filepath.Join(workdir, "out", "result.txt"))
	return err
}

// load loads a component from the cache by its file's identity, reading
// and compiling it only on a miss.
func load(eng *wasmhost.Engine, path string) (*wasmhost.Component, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("floor:%s:%d:%d", abs, fi.Size(), fi.ModTime().UnixNano())
	return eng.CompileDigest(wasmhost.CompileOptions{Name: filepath.Base(abs), Digest: id},
		func() ([]byte, error) { return os.ReadFile(abs) })
}

// config is a run as mur configures a script capsule's or a tool's: the
// manifest's default limits, stdio discarded.
func config(host *wasmhost.Host, preopens []wasmhost.Preopen) wasmhost.RunConfig {
	return wasmhost.RunConfig{
		Host: host,
		Limits: wasmhost.Limits{
			MemoryBytes:   manifest.DefaultMemoryBytes,
			TableElements: manifest.DefaultTableElements,
			Instances:     manifest.DefaultInstances,
			Memories:      manifest.DefaultMemories,
			Tables:        manifest.DefaultTables,
			Deadline:      30 * time.Second,
			Grace:         manifest.GraceSeconds * time.Second,
		},
		WASI: wasmhost.WASI{Args: []string{"capsule.wasm"}, Env: map[string]string{}, Preopens: preopens},
	}
}
