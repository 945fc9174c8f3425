package wasmhost

import (
	"context"
	"errors"
	"strings"
)

// wasi:http, the mechanism. wasmtime 39's C API provides no wasi:http, so
// the host defines the part of wasi:http/types and wasi:http/outgoing-handler
// a guest needs to build a request and hand it to `handle`, in Go (the
// reference note's §6.2 design): fields, outgoing-request and its setters,
// request-options, outgoing-body (whose `write` is refused: a body stream
// would have to be a wasip2 output-stream), and `handle`, which hands the
// request to the run's Host.HTTP decision and answers
// err(HTTP-request-denied) when it refuses. What is allowed is the caller's
// policy, not the engine's. Real egress is a later issue: a request the
// decision allows is answered err(internal-error("…not implemented")).
// Without Host.HTTP the functions fail with "capability not granted" like
// any ungranted import.

// HTTPRequest is what a guest asked wasi:http to send.
type HTTPRequest struct {
	Method        string // "GET", …, or the other(...) text
	Scheme        string // "http", "https" or other; "" when unset
	Authority     string
	PathWithQuery string
	Headers       [][2]string
}

// URL is the request's target as scheme://authority/path.
func (r HTTPRequest) URL() string {
	s := r.Scheme
	if s == "" {
		s = "https"
	}
	return s + "://" + r.Authority + r.PathWithQuery
}

// HTTP grants the wasi:http functions described above. decide is asked
// about every request handed to outgoing-handler.handle: nil allows it, an
// error denies it (the guest gets HTTP-request-denied). A nil decide denies
// every request. decide runs on the guest's call and gets its context.
func (h *Host) HTTP(decide func(ctx context.Context, req HTTPRequest) error) {
	if decide == nil {
		decide = func(context.Context, HTTPRequest) error { return errHTTPDenied }
	}
	h.http = &httpGrant{decide: decide}
}

var errHTTPDenied = errors.New("outbound HTTP is not granted")

type httpGrant struct {
	decide func(context.Context, HTTPRequest) error
}

type httpFields struct{ entries [][2]string }

type httpRequest struct {
	HTTPRequest
}

type httpOpaque struct{ kind string }

func builtinFor(iface, fn string) func(*run, []Value) (Value, error) {
	var impl func(*run, []Value) (Value, error)
	switch stripVersion(iface) {
	case "wasi:http/types":
		impl = httpTypes[fn]
	case "wasi:http/outgoing-handler":
		if fn == "handle" {
			impl = httpHandle
		}
	}
	if impl == nil {
		return nil
	}
	return func(r *run, args []Value) (Value, error) {
		if r.host == nil || r.host.http == nil {
			return nil, errNotGranted
		}
		return impl(r, args)
	}
}

func bytesOf(v Value) string {
	l, _ := v.(List)
	b := make([]byte, 0, len(l))
	for _, x := range l {
		u, _ := x.(uint8)
		b = append(b, u)
	}
	return string(b)
}

func optString(v Value) string {
	if o, ok := v.(Option); ok && o.Some {
		s, _ := o.Value.(string)
		return s
	}
	return ""
}

var okUnit = Ok(nil)

var httpTypes = map[string]func(*run, []Value) (Value, error){
	"[constructor]fields": func(r *run, _ []Value) (Value, error) {
		return r.newObj(&httpFields{}), nil
	},
	"[static]fields.from-list": func(r *run, a []Value) (Value, error) {
		f := &httpFields{}
		l, _ := a[0].(List)
		for _, e := range l {
			if t, ok := e.(Tuple); ok && len(t) == 2 {
				name, _ := t[0].(string)
				f.entries = append(f.entries, [2]string{name, bytesOf(t[1])})
			}
		}
		return Ok(r.newObj(f)), nil
	},
	"[method]fields.append": func(r *run, a []Value) (Value, error) {
		if o, ok := r.objOf(a[0]); ok {
			if f, ok := o.(*httpFields); ok {
				name, _ := a[1].(string)
				f.entries = append(f.entries, [2]string{name, bytesOf(a[2])})
			}
		}
		return okUnit, nil
	},
	"[method]fields.set": func(r *run, a []Value) (Value, error) {
		if o, ok := r.objOf(a[0]); ok {
			if f, ok := o.(*httpFields); ok {
				name, _ := a[1].(string)
				kept := f.entries[:0]
				for _, e := range f.entries {
					if !strings.EqualFold(e[0], name) {
						kept = append(kept, e)
					}
				}
				f.entries = kept
				vals, _ := a[2].(List)
				for _, v := range vals {
					f.entries = append(f.entries, [2]string{name, bytesOf(v)})
				}
			}
		}
		return okUnit, nil
	},
	"[constructor]outgoing-request": func(r *run, a []Value) (Value, error) {
		req := &httpRequest{HTTPRequest{Method: "GET"}}
		if o, ok := r.objOf(a[0]); ok {
			if f, ok := o.(*httpFields); ok {
				req.Headers = append(req.Headers, f.entries...)
			}
		}
		return r.newObj(req), nil
	},
	"[method]outgoing-request.set-method": func(r *run, a []Value) (Value, error) {
		if req := requestOf(r, a[0]); req != nil {
			if v, ok := a[1].(Variant); ok {
				req.Method = strings.ToUpper(v.Case)
				if s, ok := v.Value.(string); ok && v.Case == "other" {
					req.Method = s
				}
			}
		}
		return okUnit, nil
	},
	"[method]outgoing-request.set-scheme": func(r *run, a []Value) (Value, error) {
		if req := requestOf(r, a[0]); req != nil {
			req.Scheme = ""
			if o, ok := a[1].(Option); ok && o.Some {
				if v, ok := o.Value.(Variant); ok {
					req.Scheme = strings.ToLower(v.Case)
					if s, ok := v.Value.(string); ok && v.Case == "other" {
						req.Scheme = s
					}
				}
			}
		}
		return okUnit, nil
	},
	"[method]outgoing-request.set-authority": func(r *run, a []Value) (Value, error) {
		if req := requestOf(r, a[0]); req != nil {
			req.Authority = optString(a[1])
		}
		return okUnit, nil
	},
	"[method]outgoing-request.set-path-with-query": func(r *run, a []Value) (Value, error) {
		if req := requestOf(r, a[0]); req != nil {
			req.PathWithQuery = optString(a[1])
		}
		return okUnit, nil
	},
	"[method]outgoing-request.body": func(r *run, a []Value) (Value, error) {
		return Ok(r.newObj(&httpOpaque{"outgoing-body"})), nil
	},
	"[method]outgoing-body.write": func(r *run, a []Value) (Value, error) {
		return Err(nil), nil // no body stream: see the package comment above
	},
	"[static]outgoing-body.finish": func(r *run, a []Value) (Value, error) {
		return okUnit, nil
	},
	"[constructor]request-options": func(r *run, _ []Value) (Value, error) {
		return r.newObj(&httpOpaque{"request-options"}), nil
	},
	"[method]request-options.set-connect-timeout":       func(*run, []Value) (Value, error) { return okUnit, nil },
	"[method]request-options.set-first-byte-timeout":    func(*run, []Value) (Value, error) { return okUnit, nil },
	"[method]request-options.set-between-bytes-timeout": func(*run, []Value) (Value, error) { return okUnit, nil },
}

func requestOf(r *run, v Value) *httpRequest {
	o, ok := r.objOf(v)
	if !ok {
		return nil
	}
	req, _ := o.(*httpRequest)
	return req
}

func httpHandle(r *run, a []Value) (Value, error) {
	req := requestOf(r, a[0])
	if req == nil {
		return nil, errors.New("wasi:http handle: not a request made by this host")
	}
	if err := r.host.http.decide(r.callCtx, req.HTTPRequest); err != nil {
		return Err(Variant{Case: "HTTP-request-denied"}), nil
	}
	return Err(Variant{Case: "internal-error", Value: Some(httpNotImplemented)}), nil
}

// httpNotImplemented is the internal-error text of an allowed request.
const httpNotImplemented = "murmur: outbound HTTP is not implemented yet"
