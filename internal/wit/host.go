package wit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// Typed host helpers: each grants one murmur host interface (wit/)
// on a wasmhost.Host, decoding the guest's arguments into the records of
// records.go and encoding the answer. The runtime decides what the functions
// do; the helpers only speak the WIT.

// Definer is where the helpers define their functions: a *wasmhost.Host.
type Definer interface {
	Define(iface, fn string, f wasmhost.HostFunc)
}

// fatalError marks an error from a typed helper that must stop the guest
// instead of being returned to it as a WIT err value.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

// fatal wraps err so a typed host helper whose WIT result has an error side
// (result<_, string>) traps the guest instead of answering err(message).
func fatal(err error) error {
	if err == nil {
		return nil
	}
	return &fatalError{err}
}

// errValue turns a helper's Go error into the WIT err(string) answer, unless
// it was wrapped with fatal (then the guest traps).
func errValue(err error) (wasmhost.Value, error) {
	var f *fatalError
	if errors.As(err, &f) {
		return nil, f.err
	}
	return wasmhost.Err(strings.ToValidUTF8(err.Error(), "\uFFFD")), nil
}

// GrantToolRegistry grants murmur:tool-registry/invoke@0.1.0. A returned error is
// answered as err(message) and the guest goes on (wrap it with fatal to trap).
func GrantToolRegistry(h Definer, fn func(ctx context.Context, name string, in ToolInput) (ToolResult, error)) {
	h.Define(IfaceToolRegistry, "invoke", func(ctx context.Context, args []wasmhost.Value) (wasmhost.Value, error) {
		name, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("invoke: name is %T", args[0])
		}
		in, err := DecodeToolInput(args[1])
		if err != nil {
			return nil, fmt.Errorf("invoke: %w", err)
		}
		res, err := fn(ctx, name, in)
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(res.Value()), nil
	})
}

// ArtifactManager is what murmur:artifact-manager/manage@0.1.0 asks of the
// runtime. Errors of the functions whose WIT result has an error side are
// answered as err(message) (wrap with fatal to trap); List's error traps.
type ArtifactManager interface {
	List(ctx context.Context) ([]ArtifactSummary, error)
	Describe(ctx context.Context, name string) (ArtifactInfo, error)
	Search(ctx context.Context, query string) ([]ArtifactSummary, error)
	Pull(ctx context.Context, name, version string) (ArtifactSummary, error)
	Remove(ctx context.Context, name string) (bool, error)
	Diagnostics(ctx context.Context) (RuntimeState, error)
}

// GrantArtifactManager grants murmur:artifact-manager/manage@0.1.0.
func GrantArtifactManager(h Definer, m ArtifactManager) {
	const I = IfaceArtifactManager
	str := func(v wasmhost.Value) string { s, _ := v.(string); return s }
	h.Define(I, "list", func(ctx context.Context, _ []wasmhost.Value) (wasmhost.Value, error) {
		l, err := m.List(ctx)
		if err != nil {
			return nil, err
		}
		return summaries(l), nil
	})
	h.Define(I, "describe", func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		info, err := m.Describe(ctx, str(a[0]))
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(info.Value()), nil
	})
	h.Define(I, "search", func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		l, err := m.Search(ctx, str(a[0]))
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(summaries(l)), nil
	})
	h.Define(I, "pull", func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		s, err := m.Pull(ctx, str(a[0]), str(a[1]))
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(s.Value()), nil
	})
	h.Define(I, "remove", func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		ok, err := m.Remove(ctx, str(a[0]))
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(ok), nil
	})
	h.Define(I, "diagnostics", func(ctx context.Context, _ []wasmhost.Value) (wasmhost.Value, error) {
		s, err := m.Diagnostics(ctx)
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(s.Value()), nil
	})
}

// GrantMessageSend grants murmur:message/send@0.1.0. A returned error is answered
// as err(message) (wrap with fatal to trap).
func GrantMessageSend(h Definer, fn func(ctx context.Context, peerURL string, m Message) (TaskResult, error)) {
	h.Define(IfaceMessageSend, "send", func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		peer, _ := a[0].(string)
		m, err := DecodeMessage(a[1])
		if err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
		tr, err := fn(ctx, peer, m)
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(tr.Value()), nil
	})
}

// GrantTask grants murmur:task/task@0.1.0 (request-input). Its WIT result has no
// error side: a returned error traps the guest.
func GrantTask(h Definer, fn func(ctx context.Context, prompt string) (string, error)) {
	h.Define(IfaceTask, "request-input", func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		p, _ := a[0].(string)
		s, err := fn(ctx, p)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

// GrantTextChunks grants murmur:text/chunks@0.1.0; thinking tells emit-chunk from
// emit-thinking-chunk. A returned error traps the guest.
func GrantTextChunks(h Definer, fn func(ctx context.Context, text string, thinking bool) error) {
	for _, c := range []struct {
		name     string
		thinking bool
	}{{"emit-chunk", false}, {"emit-thinking-chunk", true}} {
		h.Define(IfaceTextChunks, c.name, func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
			s, _ := a[0].(string)
			return nil, fn(ctx, s, c.thinking)
		})
	}
}
