package grant

// MaxDescriptors is the most open descriptors one run's process holds: the
// runtime's own plus every host file, directory and socket its components
// keep open. wasmtime's WASI filesystem has no per-store descriptor cap on
// this engine version, and a session is one `mur` process, so the bound is
// the kernel's: the soft RLIMIT_NOFILE of that process. A guest that opens
// past it gets an error from open-at (it is not ended for it); what it held
// is released when its call's store is dropped. 4096 leaves a wide margin
// over what the runtime needs (the trace, logs, the door's connections, a
// tool's artifact) while stopping a loop that would hold tens of thousands.
const MaxDescriptors = 4096

// BoundDescriptors lowers this process's soft RLIMIT_NOFILE to n (never
// raises it) and returns the limit in force afterwards. Processes the run
// starts inherit the lowered soft limit and may raise it again up to the
// hard limit (a child `mur` does, at start; a native command gets its own
// capabilities.resources.max_open_files).
func BoundDescriptors(n uint64) (uint64, error) { return boundDescriptors(n) }
