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
# SendMessage, GetTask) and stop it with `mur stop`. It ends with a summary of what
# ran and what it left where.
#
# Files go under $MURMUR_DEMO_DIR (default: a fresh temporary dir, removed at the end
# of a run that succeeds), the binaries into $MURMUR_DEMO_BIN (default ./bin); stores
# and records under $HOME/.murmur as for any run. mur-roost listens on
# 127.0.0.1:$MURMUR_DEMO_ROOST_PORT (default 7700) while the orchestrator runs.
# internal/e2e's TestDemoScript runs this script.
set -euo pipefail
cd "$(dirname "$0")/.."
made_work=
if [ -n "${MURMUR_DEMO_DIR:-}" ]; then
  work=$MURMUR_DEMO_DIR
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/murmur-demo.XXXXXX")
  made_work=1
fi
mkdir -p "$work"
step() { printf '\n== %s\n' "$*"; }
field() { sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\)"\{0,1\}.*/\1/p'; }
# jstr prints the last JSON string value of key $1 in stdin, unescaped (\n, \", \\):
# enough for the door's answers without jq.
jstr() {
  sed -n 's/.*"'"$1"'":"\(\([^"\\]\|\\.\)*\)".*/\1/p' | tail -n 1 |
    sed -e 's/\\n/\n/g' -e 's/\\"/"/g' -e 's/\\\\/\\/g'
}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
started=$SECONDS
elapsed() { local s=$((SECONDS - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

cat <<EOF
Murmur demo: builds mur and mur-roost, then runs five example capsules offline
(a script, an agent, an agent delegating to two sub-capsules, an agent's A2A door).
The first build compiles every package, wasmtime's cgo bindings included: about
4-7 minutes on 2 idle cores, 8-15 minutes on 2 busy ones; once Go's build cache
holds it, the whole demo takes seconds. Work files: $work
EOF

step "build mur and mur-roost (go build ./cmd/...)"
bin=${MURMUR_DEMO_BIN:-$PWD/bin}
# go build -v names each package as it compiles it (none when the cache has them all);
# the loop prints a line every 15 s, so a long compile of one package is not silence.
buildlog=$work/build.log
go build -v -o "$bin/" ./cmd/... 2>"$buildlog" &
build=$!
t0=$SECONDS
last=$t0
while kill -0 "$build" 2>/dev/null; do
  sleep 1
  if ((SECONDS - last >= 15)); then
    last=$SECONDS
    n=$(grep -c . "$buildlog" || true)
    printf '  building… %s, %d packages compiled so far (last: %s)\n' "$(elapsed "$t0")" "$n" "$(tail -n 1 "$buildlog")"
  fi
done
if ! wait "$build"; then
  cat "$buildlog" >&2
  echo "the build failed (its output is above and in $buildlog)" >&2
  exit 1
fi
n=$(grep -c . "$buildlog" || true)
printf 'built %s in %s (%d packages compiled, the rest from the cache)\n' "$bin" "$(elapsed "$t0")" "$n"
mur=$bin/mur

step "build and publish the echo-tool artifact"
"$mur" build examples/echo-tool -o "$work/echo-tool-0.1.0.mur.zip"
"$mur" publish "$work/echo-tool-0.1.0.mur.zip"

step "run the script capsule examples/hello-script (mur run prints its answer)"
(cd examples/hello-script && "$mur" run --task "hello, murmur" --workdir "$work/hello-script")

step "run the agent capsule examples/hello-agent (murmur/driver-replay: no key, no network)"
(cd examples/hello-agent && "$mur" run --task "hello, murmur" --workdir "$work/hello-agent")
(cd examples/hello-agent && "$mur" trace show @1)

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
delegation_sid=$sid

step "delegation: the tree (mur trace show --tree)"
(cd examples/delegation && "$mur" trace show --tree "$sid")

step "delegation: the worker's answer and the orchestrator's report"
for f in "$records"/children/delegation-worker-*/out/result.txt; do cat "$f"; done
printf 'report: %s\n' "$(cat "$records/out/result.txt")"

step "serve the agent (after_task: sleep) and talk to its door"
rm -f "$work/sleep.ready"
"$mur" run --manifest examples/hello-agent/sleep.yaml --json --workdir "$work/hello-agent-sleep" >"$work/sleep.ready" 2>"$work/sleep.err" &
pid=$!
pids+=("$pid")
for _ in $(seq 100); do [ -s "$work/sleep.ready" ] && break; sleep 0.1; done
addr=$(field url <"$work/sleep.ready")
sid=$(field session_id <"$work/sleep.ready")
echo "door: http://$addr  session: $sid"
"$mur" ps
card=$(curl -sS "http://$addr/.well-known/agent-card.json")
# first() is the first string value of key $1 in stdin (the card's own, before its skills').
first() { grep -o '"'"$1"'":"[^"]*"' | head -n 1 | sed 's/.*:"\(.*\)"/\1/'; }
printf 'agent card: %s %s, "%s"\n' "$(printf '%s' "$card" | first name)" "$(printf '%s' "$card" | first version)" \
  "$(printf '%s' "$card" | first description)"
rpc() { curl -sS -X POST "http://$addr/" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' -d "$1"; }
sent=$(rpc '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"demo-1","role":"ROLE_USER","parts":[{"text":"hello, door"}]}}}')
task=$(printf '%s' "$sent" | sed -n 's/.*"id":"\(tsk_[0-9a-f]*\)".*/\1/p')
printf 'SendMessage "hello, door": task %s %s\n' "$task" "$(printf '%s' "$sent" | jstr state)"
got=$(rpc '{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"'"$task"'"}}')
printf 'GetTask %s: %s\n' "$task" "$(printf '%s' "$got" | jstr state)"
printf 'answer: %s\n' "$(printf '%s' "$got" | jstr text)"

step "stop it"
"$mur" stop "$sid"
wait "$pid" || { echo "the sleeping agent exited $?" >&2; exit 1; }
"$mur" trace show "$sid"

step "summary"
murhome=$HOME/.murmur
cat <<EOF
Ran, offline, in $(elapsed "$started"): the script capsule hello-script and the agent
capsule hello-agent on a task each; the orchestrator agent delegating to a Go script
worker and an agent reviewer through mur-roost; hello-agent serving its A2A door until
mur stop.
Records (trace.jsonl, logs/, out/ of every session) are under
  $murhome/records$PWD/examples/
  e.g. the orchestrator's: (cd examples/delegation && $mur trace show --tree $delegation_sid)
In $murhome it put: the published artifacts in artifacts/ (local/echo-tool,
local/orchestrator, local/delegation-worker, local/delegation-reviewer), the compiled components
in compiled/, the records in records/ (remove one with 'mur trace rm SESSION').
EOF
if [ -n "$made_work" ]; then
  rm -rf "$work"
  echo "The work folders and .mur.zip files went to $work, now removed."
else
  echo "The work folders and .mur.zip files are in $work."
fi
cat <<EOF
Next: write a capsule of your own (docs/guest-kit.md) and run it with 'mur run';
every command and file of a run: docs/running-capsules.md.
EOF
