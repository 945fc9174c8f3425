#!/usr/bin/env bash
# Rebuild or verify the Go-kit components committed in this repository.
#
#   scripts/components.sh build [NAME...]   rebuild them in place and rewrite each SHA256SUMS
#   scripts/components.sh check [NAME...]   rebuild into a temporary dir and fail unless the bytes
#                                           equal both the committed .wasm and its SHA256SUMS line
#
# NAME is a directory's last element (capsule-probe, tool-echo, tool-flood, capsule-http,
# driver-anthropic-http, hello-script, echo-tool, hook-log, policy-probe, policy-both, hook (examples/policy),
# fetch, state-counter, capsule-repeat, hook-state, driver-state, driver-anthropic-c, http-get-c);
# no NAME means all. Each directory holds the Go sources, the built .wasm and SHA256SUMS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# dir world file
components=(
  "testdata/components/capsule-probe capsule capsule-probe.wasm"
  "testdata/components/tool-echo tool tool-echo.wasm"
  # bounds on what one tool call hands the host (chunks, metadata)
  "testdata/components/tool-flood tool tool-flood.wasm"
  "testdata/components/capsule-http capsule-http capsule-http.wasm"
  "testdata/components/driver-anthropic-http driver-http driver-anthropic-http.wasm"
  "examples/hello-script capsule hello-script.wasm"
  "examples/echo-tool tool echo-tool.wasm"
  # delegation: a script that delegates (capsule-delegator), examples/delegation's worker
  "testdata/components/capsule-delegator capsule capsule-delegator.wasm"
  "examples/delegation/worker capsule delegation-worker.wasm"
  "examples/hook-log hook hook-log.wasm"
  # the policy gate: a probe whose answer the call's input picks, and the example policy hook
  "testdata/components/policy-probe policy-hook policy-probe.wasm"
  # one component exporting both the lifecycle and the gate (its own wit/ world, build-tags)
  "testdata/components/policy-both both policy-both.wasm"
  "examples/policy/hook policy-hook policy-hook.wasm"
  "examples/fetch fetch fetch.wasm"
  # state stores: a tool that counts its calls in its store, a script that calls a tool N times
  "examples/state-counter tool state-counter.wasm"
  "testdata/components/capsule-repeat capsule capsule-repeat.wasm"
  "testdata/components/hook-state hook hook-state.wasm"
  # a stored driver that counts its turns in its store
  "testdata/components/driver-state driver driver-state.wasm"
  # C, not the Go kit (a fourth field "c": scripts/build-c-component.sh)
  "testdata/components/driver-anthropic-c driver-c driver-anthropic-c.wasm c"
  "testdata/components/http-get-c http-get-c http-get-c.wasm c"
)

mode=${1:-}
case "$mode" in build|check) shift ;; *) echo "usage: $0 build|check [NAME...]" >&2; exit 2 ;; esac


tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0 count=0
for c in "${components[@]}"; do
  read -r dir world file lang <<<"$c"
  build=scripts/build-component.sh
  [ "${lang:-}" = c ] && build=scripts/build-c-component.sh
  name=$(basename "$dir")
  if [ $# -gt 0 ]; then
    match=0; for want in "$@"; do [ "$want" = "$name" ] && match=1; done
    [ $match -eq 1 ] || continue
  fi
  count=$((count + 1))
  if [ "$mode" = build ]; then
    $build "$dir" "$world" "$dir/$file"
    (cd "$dir" && sha256sum "$file" >SHA256SUMS)
    continue
  fi
  $build "$dir" "$world" "$tmp/$file"
  got=$(sha256sum "$tmp/$file" | cut -d' ' -f1)
  committed=$(sha256sum "$dir/$file" | cut -d' ' -f1)
  listed=$(awk -v f="$file" '$2 == f || $2 == "*" f {print $1}' "$dir/SHA256SUMS")
  if [ "$got" = "$committed" ] && [ "$got" = "$listed" ]; then
    echo "ok   $dir/$file $got"
  else
    echo "FAIL $dir/$file: rebuilt $got, committed $committed, SHA256SUMS ${listed:-missing}" >&2
    echo "     rebuild with: scripts/components.sh build $name (same Go version and package-lock.json)" >&2
    status=1
  fi
done
[ $count -gt 0 ] || { echo "error: no component matched: $*" >&2; exit 2; }
exit $status
