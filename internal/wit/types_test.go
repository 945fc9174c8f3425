package wit

import "github.com/murmur-go/murmur/internal/wasmhost"

// WIT types of the records (wit/ in the repository): the tests check answers against them.
var (
	tStatus     = tEnum("passed", "failed", "error")
	tToolInput  = tRecord(wasmhost.Field{Name: "data", Type: tOption(tString)}, wasmhost.Field{Name: "log-path", Type: tOption(tString)})
	tToolResult = tRecord(
		wasmhost.Field{Name: "status", Type: tStatus},
		wasmhost.Field{Name: "summary", Type: tOption(tString)},
		wasmhost.Field{Name: "data", Type: tOption(tString)},
		wasmhost.Field{Name: "data-path", Type: tOption(tString)},
		wasmhost.Field{Name: "truncated", Type: tBool},
		wasmhost.Field{Name: "metadata", Type: tList(tTuple(tString, tString))},
	)
	tRuntimeType     = tEnum("wasm", "native")
	tArtifactSummary = tRecord(wasmhost.Field{Name: "name", Type: tString}, wasmhost.Field{Name: "version", Type: tString}, wasmhost.Field{Name: "runtime", Type: tRuntimeType})
	tArtifactInfo    = tRecord(wasmhost.Field{Name: "name", Type: tString}, wasmhost.Field{Name: "version", Type: tString}, wasmhost.Field{Name: "description", Type: tString},
		wasmhost.Field{Name: "tags", Type: tList(tString)}, wasmhost.Field{Name: "runtime", Type: tRuntimeType},
		wasmhost.Field{Name: "input-schema", Type: tOption(tString)}, wasmhost.Field{Name: "output-schema", Type: tOption(tString)})
	tRuntimeState = tRecord(wasmhost.Field{Name: "capsule-id", Type: tString}, wasmhost.Field{Name: "installed", Type: tList(tArtifactSummary)},
		wasmhost.Field{Name: "capabilities", Type: tString})
	tTaskResult = tRecord(wasmhost.Field{Name: "task-id", Type: tString}, wasmhost.Field{Name: "context-id", Type: tString}, wasmhost.Field{Name: "state", Type: tString})
)

var (
	tString = &wasmhost.Type{Kind: wasmhost.KindString}
	tBool   = &wasmhost.Type{Kind: wasmhost.KindBool}
)

func tList(e *wasmhost.Type) *wasmhost.Type { return &wasmhost.Type{Kind: wasmhost.KindList, Elem: e} }
func tOption(e *wasmhost.Type) *wasmhost.Type {
	return &wasmhost.Type{Kind: wasmhost.KindOption, Elem: e}
}
func tResult(ok, err *wasmhost.Type) *wasmhost.Type {
	return &wasmhost.Type{Kind: wasmhost.KindResult, Ok: ok, Err: err}
}
func tTuple(e ...*wasmhost.Type) *wasmhost.Type {
	return &wasmhost.Type{Kind: wasmhost.KindTuple, Tuple: e}
}
func tEnum(n ...string) *wasmhost.Type { return &wasmhost.Type{Kind: wasmhost.KindEnum, Names: n} }
func tRecord(f ...wasmhost.Field) *wasmhost.Type {
	return &wasmhost.Type{Kind: wasmhost.KindRecord, Fields: f}
}
