#!/usr/bin/env bash
# The README's example, end to end and offline. The main part is delegation
# (examples/delegation): publish the three capsules, run the orchestrator with
# `mur run --with-roost` (mur-roost started for that run, allowing the orchestrator to
# delegate, and ended with it) — an agent that delegates to a Go script-capsule worker
# and to an agent reviewer in parallel, the worker starting with a copy of the
# orchestrator's work folder — print the delegation tree and the report. Before it:
# publish the echo-tool artifact and run the Go script capsule and the agent capsule on
# a task each; after it: start the agent again
# with after_task: sleep, talk to its A2A door from outside with curl (agent card,
# SendMessage, GetTask) and stop it with `mur stop`.
#
# Files go under $MURMUR_DEMO_DIR (default: a fresh temporary dir), the binaries into
# $MURMUR_DEMO_BIN (default ./bin); stores and records under $HOME/.murmur as for any
# run. mur-roost listens on 127.0.0.1:$MURMUR_DEMO_ROOST_PORT (default 7700) while the
# orchestrator runs. internal/cli's TestDemoScript runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${MURMUR_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/murmur-demo.XXXXXX")}
mkdir -p "$work"
step() { printf '\n== %s\n' "$*"; }
field() { sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\)"\{0,1\}.*/\1/p'; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

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

step "delegation: publish the orchestrator and its two sub-capsules"
for c in examples/delegation/worker examples/delegation/reviewer examples/delegation; do
  "$mur" build "$c" -o "$work/$(basename "$c").mur.zip"
  "$mur" publish "$work/$(basename "$c").mur.zip"
done

step "delegation: run the orchestrator (its work folder holds notes.md)"
mkdir -p "$work/orchestrator"
cp examples/delegation/notes.md "$work/orchestrator/"
# --with-roost starts mur-roost for this run only (on 127.0.0.1:$roost_port, allowing
# the orchestrator at the top level), points the run at it and ends it after the
# session; its start-up lines appear on stderr. A daemon already on that port is
# E-RUN-080: set MURMUR_DEMO_ROOST_PORT to a free one.
roost_port=${MURMUR_DEMO_ROOST_PORT:-7700}
ready=$(cd examples/delegation && "$mur" run --with-roost --roost-port "$roost_port" --json \
  --task "Have the release notes counted and reviewed, then report." --workdir "$work/orchestrator")
sid=$(printf '%s' "$ready" | field session_id)
records=$(printf '%s' "$ready" | field records_dir)

step "delegation: the tree (mur trace show --tree)"
(cd examples/delegation && "$mur" trace show --tree "$sid")

step "delegation: the worker's answer and the orchestrator's report"
for f in "$records"/children/delegation-worker-*/out/result.txt; do cat "$f"; done
printf 'report: %s\n' "$(cat "$records/out/result.txt")"

step "serve the agent (after_task: sleep) and talk to its door"
rm -f "$work/sleep.ready"
"$mur" run --manifest examples/hello-agent/sleep.yaml --json --workdir "$work/hello-agent-sleep" >"$work/sleep.ready" &
pid=$!
pids+=("$pid")
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
