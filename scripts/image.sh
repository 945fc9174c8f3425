#!/usr/bin/env bash
# Builds Murmur's OCI image from deploy/Containerfile with the first of podman,
# buildah or docker on PATH.
#
#   scripts/image.sh [--base IMAGE] [--tag TAG] [--capsules DIR...]
#
# mur, mur-roost, mur-contain and mur-driver are built static (no libc at run
# time) into the build context's rootfs/usr/local/bin; each --capsules DIR is
# built with `mur build` and published into the image's global store
# (/murmur/.murmur/artifacts). The default base is scratch plus Debian's
# busybox-static (/bin/busybox and its applet links); --base names another.
#
# The same inputs give the same image: the binaries are built with -trimpath
# and no build id, the context's files get one fixed mtime, and the image is
# written with a fixed timestamp (podman/buildah --timestamp 0; docker:
# SOURCE_DATE_EPOCH=0 with BuildKit's rewrite-timestamp).
set -euo pipefail
cd "$(dirname "$0")/.."
base=scratch
tag=murmur:dev
capsules=()
while [ $# -gt 0 ]; do
  case $1 in
    --base) base=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --capsules) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do capsules+=("$1"); shift; done ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

tool=
for t in podman buildah docker; do
  if command -v "$t" >/dev/null 2>&1; then tool=$t; break; fi
done
[ -n "$tool" ] || { echo "image: none of podman, buildah or docker is on PATH" >&2; exit 1; }
command -v file >/dev/null 2>&1 || { echo "image: the file command is needed to check the binaries are static (apt-get install file)" >&2; exit 1; }

ctx=$(mktemp -d "${TMPDIR:-/tmp}/murmur-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
bin=$ctx/rootfs/usr/local/bin
mkdir -p "$bin" "$ctx/home/.murmur" "$ctx/home/tmp"

echo "image: building static mur, mur-roost, mur-contain, mur-driver (the first build compiles wasmtime's bindings: minutes)" >&2
export CGO_ENABLED=1
static=(-trimpath -tags 'netgo osusergo murdriver' -ldflags '-s -w -buildid= -linkmode external -extldflags "-static"')
go build "${static[@]}" -o "$bin/" ./cmd/mur 2>"$ctx/build.log" || { cat "$ctx/build.log" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -tags 'netgo osusergo' -ldflags '-s -w -buildid=' -o "$bin/" ./cmd/mur-roost ./cmd/mur-driver ./cmd/mur-contain
for b in mur mur-roost mur-contain mur-driver; do
  if file "$bin/$b" | grep -q 'dynamically linked'; then
    echo "image: $b is dynamically linked" >&2; exit 1
  fi
done
version=$("$bin/mur" --version | sed 's/^mur //')
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)

if [ "$base" = scratch ]; then
  bb=$(command -v busybox || true)
  [ -n "$bb" ] && file -L "$bb" | grep -q 'statically linked' ||
    { echo "image: the scratch base needs Debian's busybox-static (apt-get install busybox-static), or give --base" >&2; exit 1; }
  mkdir -p "$ctx/rootfs/bin"
  cp "$bb" "$ctx/rootfs/bin/busybox"
  for a in $("$bb" --list); do
    [ "$a" = busybox ] || ln -s busybox "$ctx/rootfs/bin/$a"
  done
  # /tmp for tools that expect it; HOME/tmp is TMPDIR.
  mkdir -p "$ctx/rootfs/tmp"
  chmod 1777 "$ctx/rootfs/tmp"
fi

# Publish the capsules with the mur just built, into the image's HOME.
for c in ${capsules[@]+"${capsules[@]}"}; do
  zip=$ctx/$(basename "$c").mur.zip
  HOME=$ctx/home "$bin/mur" build "$c" -o "$zip" >/dev/null
  # No compile cache in the image: its entries are bound to the files that
  # hold them, which an image layer does not keep (docs/deploy.md).
  HOME=$ctx/home "$bin/mur" publish --no-precompile "$zip" >/dev/null
  rm -f "$zip"
done
rm -rf "$ctx/home/.murmur/cache" "$ctx/home/.murmur/records" "$ctx/home/.murmur/sessions"

find "$ctx/rootfs" "$ctx/home" -exec touch -h -d @0 {} +
cp deploy/Containerfile "$ctx/Containerfile"
args=(--build-arg "BASE=$base" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" -t "$tag" -f "$ctx/Containerfile")
case $tool in
  podman|buildah) "$tool" build --timestamp 0 "${args[@]}" "$ctx" ;;
  docker) SOURCE_DATE_EPOCH=0 docker buildx build --output "type=docker,rewrite-timestamp=true" "${args[@]}" "$ctx" ;;
esac
echo "image: built $tag with $tool (mur $version)" >&2
