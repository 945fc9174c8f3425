#!/usr/bin/env bash
# The README's example, end to end and offline: build mur, publish the echo-tool
# artifact, run the Go script capsule and the agent capsule on a task each, then start
# the agent again with after_task: sleep, talk to its A2A door from outside with curl
# (agent card, SendMessage, GetTask) and stop it with `mur stop`.
#
# Files go under $MURMUR_DEMO_DIR (default /tmp/murmur-demo), the binaries into
# $MURMUR_DEMO_BIN (default ./bin); stores and records under $HOME/.murmur as for any
# run. internal/cli's TestDemoScript runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${MURMUR_DEMO_DIR:-/tmp/murmur-demo}
mkdir -p "$work"
step() { printf '\n== %s\n' "$*"; }
field() { sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\)"\{0,1\}.*/\1/p'; }

step "build mur and mur-roost"
bin=${MURMUR_DEMO_BIN:-$PWD/bin}
go build -o "$bin/" ./cmd/...
mur=$bin/mur

step "build and publish the echo-tool artifact"
"$mur" build examples/echo-tool -o "$work/echo-tool-0.1.0.mur.zip"
"$mur" publish "$work/echo-tool-0.1.0.mur.zip"

step "run the script capsule examples/hello-script"
(cd examples/hello-script && "$mur" run --task "hello, murmur" --workdir "$work/hello-script")
cat "$work/hello-script/out/result.txt"

step "run the agent capsule examples/hello-agent (murmur/driver-replay: no key, no network)"
ready=$(cd examples/hello-agent && "$mur" run --json --task "hello, murmur" --workdir "$work/hello-agent")
(cd examples/hello-agent && "$mur" trace show "$(printf '%s' "$ready" | field session_id)")
printf 'answer: %s\n' "$(cat "$(printf '%s' "$ready" | field records_dir)/out/result.txt")"

step "serve the agent (after_task: sleep) and talk to its door"
rm -f "$work/sleep.ready"
"$mur" run --manifest examples/hello-agent/sleep.yaml --json --workdir "$work/hello-agent-sleep" >"$work/sleep.ready" &
pid=$!
for _ in $(seq 100); do [ -s "$work/sleep.ready" ] && break; sleep 0.1; done
addr=$(field url <"$work/sleep.ready")
sid=$(field session_id <"$work/sleep.ready")
echo "door: http://$addr  session: $sid"
"$mur" ps
curl -sS "http://$addr/.well-known/agent-card.json"; echo
rpc() { curl -sS -X POST "http://$addr/" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' -d "$1"; echo; }
sent=$(rpc '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"demo-1","role":"ROLE_USER","parts":[{"text":"hello, door"}]}}}')
echo "$sent"
task=$(printf '%s' "$sent" | sed -n 's/.*"id":"\(tsk_[0-9a-f]*\)".*/\1/p')
rpc '{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"'"$task"'"}}'

step "stop it"
"$mur" stop "$sid"
wait "$pid" || true
"$mur" trace show "$sid"
