// Package hostapi implements the murmur:* host interfaces a script capsule's
// component imports (docs/running-capsules.md): murmur:tool-registry/invoke runs the tool
// artifacts its manifest declares, murmur:artifact-manager/manage lists,
// describes, searches, pulls and removes artifacts of the stores, and
// murmur:message/send sends an A2A 1.0 message to a peer capsule.
//
// One Session serves one capsule session. It owns what outlives a single call:
// the compiled tool components (compiled once, instantiated fresh per invoke
// so a trap in one call cannot leak into the next), the effective grants that
// every call is checked against, and the HTTP client of message/send. Every
// call that the spec asks to record goes through a Recorder (the script
// runtime's, which also feeds the OpenTelemetry spans), so the trace's totals
// and lines can never disagree.
//
// Nothing here trusts the guest: names, versions and URLs are validated, the
// grants are checked before any store or network is touched, and a failure is
// answered as the WIT err(string) — the capsule goes on — never as a trap.
//
// Use (internal/cli's mur run does exactly this):
//
//	api, err := hostapi.New(hostapi.Config{Engine: eng, Manifest: m, Grants: &grants,
//		Stores: chain, Session: sess})
//	defer api.Close()
//	api.Register(host, recorder) // before Engine.Instantiate of the capsule
//
// Readings where the spec is silent:
//
//   - invoke: a tool runs with its own narrowed grant (EffectiveGrants): limits
//     (deadline, memory, tables, instances), an environment of its env.allow
//     names present in mur's environment plus the identity variables, its
//     filesystem.scope of the work folder read-write as "/" and "." (the whole
//     folder when undeclared; a scope reached through a symlink out of the
//     folder is refused) and the runtime dir read-only as murmur-runtime/. Its
//     stdout/stderr go to logs/tools/<scope>/<name>.std{out,err}.log (the last
//     call's). A tool importing murmur:task/task gets an error from
//     request-input (a script capsule has no one to ask); text chunks are
//     accepted and dropped. input_bytes/output_bytes count the data strings.
//     delegate-task is not provided (a later issue): invoking it is err.
//   - artifact-manager: list/search/describe see the project store then the
//     global store (the project copy wins for the same name@version);
//     runtime-type is wasm for what runs as a component (tools, drivers,
//     hooks, script capsules) and native for skills and agent capsules;
//     describe picks the newest version; input/output schemas are none (no
//     artifact carries one yet). An install pattern is matched against the
//     full name and the bare name. remove deletes every version of the name
//     from the project store, never the global one, and leaves murmur.lock to
//     'mur install'. pull and remove need a project store (not --capsule).
//   - message/send: a peer URL without a scheme (a capsule URL as mur
//     records it, "127.0.0.1:PORT") is http; the request asks for the peer's
//     immediate answer (returnImmediately); an answer that is a message, not
//     a task, reads as TASK_STATE_COMPLETED. No proxy, no redirects. Only an
//     answered send writes a2a_send.
package hostapi
