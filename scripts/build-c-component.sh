#!/usr/bin/env bash
# Build a freestanding C component (no libc, no WASI adapter) reproducibly:
#
#   scripts/build-c-component.sh <dir> <world> <out.wasm>
#
# <dir> holds the C sources (*.c) and a wit/ directory with <world>. The sources
# are compiled and linked as one wasm32 core module with Debian's clang and
# wasm-ld (apt-get install clang lld), exports named in the sources
# (export_name), then the WIT is embedded and the module wrapped as a component
# with the pinned jco (scripts/componentize.mjs). The same sources, clang version
# and lockfile give the same bytes.
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 <dir> <world> <out.wasm>" >&2; exit 2; }
dir=$1 world=$2 out=$3
[ -d "$dir/wit" ] || { echo "error: no wit directory in $dir" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
command -v clang >/dev/null || { echo "error: clang is not installed (apt-get install clang lld)" >&2; exit 1; }
command -v wasm-ld >/dev/null || { echo "error: wasm-ld is not installed (apt-get install lld)" >&2; exit 1; }
command -v node >/dev/null || { echo "error: node is not installed (apt-get install nodejs npm)" >&2; exit 1; }
if [ ! -x "$root/node_modules/.bin/jco" ]; then
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
dir=$(cd "$dir" && pwd)

# -mbulk-memory: memcpy/memset are memory.copy/memory.fill instructions.
# Sources in a fixed order and by relative name, so nothing path- or
# locale-dependent reaches the module.
(cd "$dir" && LC_ALL=C clang --target=wasm32 -O2 -nostdlib -ffreestanding -mbulk-memory -Wall -Wextra -Werror \
  -Wl,--no-entry -Wl,--strip-all -o "$tmp/core.wasm" $(LC_ALL=C ls *.c))
node "$root/scripts/componentize.mjs" "$tmp/core.wasm" "$dir/wit" "$world" "$tmp/component.wasm"
mkdir -p "$(dirname "$out")"
mv "$tmp/component.wasm" "$out"
echo "built $out ($(wc -c <"$out") bytes, world $world)" >&2
