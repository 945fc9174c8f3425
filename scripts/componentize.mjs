// Turn a core wasm module (a Go wasip1 reactor) into a component for one murmur world.
//
//   node scripts/componentize.mjs <core.wasm> <wit-dir> <world> <out.wasm>
//
// It does what `jco embed --wit DIR --world-name W` + `jco new --wasi-reactor` would do, through
// jco's JavaScript API, because the pinned jco 1.35.0 CLI has two bugs on this path:
//  1. its bundled @bytecodealliance/preview2-shim (0.26.1) no longer preopens "/", so
//     reading a WIT path fails with "failed to get path metadata … (os error 44)";
//  2. `jco embed --world-name` is passed to wasm-tools as `worldName`, which it ignores
//     (it reads `world`), so a package with several worlds cannot be embedded.
// Output is a pure function of the inputs and the pinned jco (no timestamps).
import { readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { resolve, dirname } from "node:path";

const [core, witDir, world, out] = process.argv.slice(2);
if (!core || !witDir || !world || !out) {
  console.error("usage: node scripts/componentize.mjs <core.wasm> <wit-dir> <world> <out.wasm>");
  process.exit(2);
}

const req = createRequire(import.meta.url);
const jcoMain = req.resolve("@bytecodealliance/jco");
const jcoReq = createRequire(jcoMain);
// Bug 1: give the shim instance that jco-transpile's wasm-tools uses a "/" preopen.
const transpileReq = createRequire(jcoReq.resolve("@bytecodealliance/jco-transpile"));
const fsShim = await import(pathToFileURL(transpileReq.resolve("@bytecodealliance/preview2-shim/filesystem")).href);
fsShim._setPreopens({ "/": "/" });

const { componentEmbed, componentNew } = await import(pathToFileURL(jcoMain).href);
const adapterPath = resolve(dirname(jcoMain), "..", "lib", "wasi_snapshot_preview1.reactor.wasm");

try {
  const binary = await readFile(core);
  // Bug 2: pass the world under the key wasm-tools reads.
  const embedded = await componentEmbed({ binary, witPath: resolve(witDir), world, stringEncoding: "utf8" });
  const adapter = await readFile(adapterPath);
  const component = await componentNew(embedded, [["wasi_snapshot_preview1", adapter]]);
  await writeFile(out, component);
} catch (err) {
  // wasm-tools explains itself (for example an import the world does not have):
  // print its message, not a JavaScript stack.
  const msg = (err && err.message) || String(err);
  console.error(`error: cannot make a '${world}' component of ${core}:\n${msg}`);
  process.exit(1);
}
