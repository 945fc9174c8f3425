#!/usr/bin/env bash
# Build a Go package written with the guest kit (github.com/murmur-go/murmur/guest)
# into a WebAssembly component, in one command and reproducibly:
#
#   scripts/build-component.sh <go-package-dir> <world> <out.wasm>
#
# <world> is capsule, tool or driver (wit/runtime-guest.wit), or hook (wit/hook/hook.wit:
# the kit's hook exports are compiled in with the build tag murmur_hook), or policy-hook
# (wit/policy/policy.wit: the kit's gate export, build tag murmur_policy); a package with its own wit/
# directory (a world that adds imports, such as wasi:http) names a world of that
# directory instead. Steps: a Go wasip1
# reactor (c-shared) with -trimpath -buildvcs=false -ldflags='-s -w', then the murmur
# WIT is embedded and the module wrapped as a component with the pinned jco
# (package-lock.json; installed with `npm ci` when node_modules is missing).
# The same sources, Go version and lockfile give the same bytes.
set -euo pipefail

usage() { echo "usage: $0 <go-package-dir> <capsule|tool|driver|hook|policy-hook> <out.wasm>" >&2; exit 2; }
[ $# -eq 3 ] || usage
pkg=$1 world=$2 out=$3
[ -d "$pkg" ] || { echo "error: no such package directory: $pkg" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
wit="$root/wit"
tags=""
if [ "$world" = hook ]; then
  wit="$root/wit/hook"
  tags="-tags=murmur_hook"
elif [ "$world" = policy-hook ]; then
  wit="$root/wit/policy"
  tags="-tags=murmur_policy"
elif [ -d "$pkg/wit" ]; then
  wit="$(cd "$pkg/wit" && pwd)"
  # a world that exports the kit's hook or gate exports names their build tags in build-tags
  [ -f "$pkg/build-tags" ] && tags="-tags=$(tr -d ' \n' <"$pkg/build-tags")"
else
  case "$world" in capsule|tool|driver) ;; *) echo "error: unknown world '$world' (want capsule, tool or driver)" >&2; usage ;; esac
fi

command -v node >/dev/null || { echo "error: node is not installed (apt-get install nodejs npm)" >&2; exit 1; }
if [ ! -x "$root/node_modules/.bin/jco" ]; then
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Relative package paths are taken from the caller's directory.
case "$pkg" in /*) ;; *) pkg="$PWD/$pkg" ;; esac
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

(cd "$pkg" && env -u GOFLAGS -u GOWASM GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 \
  go build $tags -buildmode=c-shared -trimpath -buildvcs=false -ldflags='-s -w' -o "$tmp/core.wasm" .)
node "$root/scripts/componentize.mjs" "$tmp/core.wasm" "$wit" "$world" "$tmp/component.wasm"
mkdir -p "$(dirname "$out")"
mv "$tmp/component.wasm" "$out"
echo "built $out ($(wc -c <"$out") bytes, world $world)" >&2
