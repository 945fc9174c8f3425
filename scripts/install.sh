#!/usr/bin/env bash
# Installs mur and mur-roost (and mur-contain, mur's containment helper, and
# mur-driver, the helper its provider built-in drivers run in) from
# this checkout into PREFIX/bin (default
# $HOME/.local/bin). mur is built with the murdriver tag, the split build: it
# links no provider SDK and runs murmur/driver-anthropic and -openai in
# mur-driver (a plain `go build ./cmd/mur` links them and needs no helper;
# internal/driver/remote/RATIONALE.md says what each costs). All are built at one version and
# each is run once (--version) before anything in PREFIX/bin is replaced; when
# either cannot be built or cannot start, or the two report different versions,
# what was there is left as it was and the reason is printed.
#
#   scripts/install.sh [PREFIX]        (make install PREFIX=… does the same)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-${PREFIX:-$HOME/.local}}
bindir=$prefix/bin
stage=$(mktemp -d "${TMPDIR:-/tmp}/murmur-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT

fail() { echo "install: $*; nothing in $bindir was changed" >&2; exit 1; }

echo "building mur and mur-roost (the first build compiles wasmtime's bindings: several minutes on a small machine; see README.md, What you need)"
# mur-contain is built static (no cgo): it starts for every contained
# command, and the dynamic loader alone would cost it milliseconds.
if ! go build -o "$stage/" -tags murdriver ./cmd/mur 2>"$stage/build.log" ||
   ! go build -o "$stage/" ./cmd/mur-roost ./cmd/mur-driver 2>>"$stage/build.log" ||
   ! CGO_ENABLED=0 go build -o "$stage/" ./cmd/mur-contain 2>>"$stage/build.log"; then
  cat "$stage/build.log" >&2
  fail "the build failed"
fi
for b in mur mur-roost; do
  if ! out=$("$stage/$b" --version 2>&1); then
    fail "the new $b cannot start: ${out:-no output}"
  fi
  printf '%s\n' "$out" >"$stage/$b.version"
done
mv_=$(sed 's/^mur //' "$stage/mur.version")
rv_=$(sed 's/^mur-roost //' "$stage/mur-roost.version")
[ "$mv_" = "$rv_" ] || fail "mur reports $mv_ but mur-roost reports $rv_"
# mur-contain is mur's containment helper (it applies the containment tier to
# native commands): mur uses it only when its stamp matches mur's own build,
# and re-executes itself otherwise.
if ! out=$("$stage/mur-contain" --version 2>&1); then
  fail "the new mur-contain cannot start: ${out:-no output}"
fi
# mur-driver runs murmur/driver-anthropic and murmur/driver-openai (this mur,
# built with the murdriver tag, does not link their SDKs): without it beside
# mur, those two drivers are refused (E-RUN-059).
if ! out=$("$stage/mur-driver" --version 2>&1); then
  fail "the new mur-driver cannot start: ${out:-no output}"
fi

mkdir -p "$bindir"
for b in mur-contain mur-driver mur mur-roost; do
  # A rename within one filesystem replaces the old binary atomically: a
  # running mur keeps its inode, the next start gets the new one.
  cp "$stage/$b" "$bindir/.$b.new"
  mv -f "$bindir/.$b.new" "$bindir/$b"
done
echo "installed mur and mur-roost $mv_ in $bindir"
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo "note: $bindir is not on your PATH; add it, e.g. export PATH=\"$bindir:\$PATH\"" ;;
esac
