package wit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp"
)

// HTTPPolicy decides an outgoing wasi:http request (docs/guest-kit.md): nil
// allows it, an error denies it (the guest gets HTTP-request-denied; the
// error, which names the manifest key to edit, is logged). A policy may
// rewrite the request's headers (the gateway key swap). The engine carries
// the request to the policy (wasihttp.Grant); what Murmur allows is
// decided here.
type HTTPPolicy func(ctx context.Context, req *wasihttp.Request) error

// ErrHTTPDenied is the policy answer of DenyAllHTTP.
var ErrHTTPDenied = errors.New("outbound HTTP is not granted")

// DenyAllHTTP denies every request: the grant of a component that may reach
// nothing.
func DenyAllHTTP(context.Context, *wasihttp.Request) error { return ErrHTTPDenied }

// The bounds on a component's outgoing HTTP.
const (
	// DefaultHTTPMaxBodyBytes bounds one response body; HTTPMaxBodyEnv
	// overrides it.
	DefaultHTTPMaxBodyBytes = 64 << 20
	HTTPMaxBodyEnv          = "MURMUR_HTTP_MAX_BODY_BYTES"
	// HTTPMaxInFlight bounds the requests one component call has
	// outstanding.
	HTTPMaxInFlight = 16
)

// HTTPMaxBodyBytes is the response body bound: $MURMUR_HTTP_MAX_BODY_BYTES
// when it is a positive integer, else the default. lookup reads mur's own
// environment (nil: os.LookupEnv).
func HTTPMaxBodyBytes(lookup func(string) (string, bool)) int64 {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if v, ok := lookup(HTTPMaxBodyEnv); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return DefaultHTTPMaxBodyBytes
}

// NetworkAllow is the grant of a capsule and its tools: a request goes out
// when capabilities.network.allow covers its scheme://authority under the
// coverage rule of the spawn envelope (a bare host covers both schemes and every
// port; a scheme form only itself, at its port or the scheme's default).
// key is the manifest key a refusal names ("capabilities.network.allow").
func NetworkAllow(allow []string, key string) HTTPPolicy {
	allow = append([]string(nil), allow...)
	return func(_ context.Context, req *wasihttp.Request) error {
		origin := req.Origin()
		if manifest.NetListCovers(allow, origin) {
			return nil
		}
		return fmt.Errorf("%s is not covered by %s; add %s to it to allow this request", origin, key, origin)
	}
}

// Gateway is a driver's grant (docs/drivers.md): its wasi:http reaches the
// gateway endpoint's scheme://authority only. The component sees
// Placeholder as MURMUR_INFERENCE_API_KEY; on a request to the endpoint the
// host puts Key in its place in x-api-key and authorization headers, and a
// request anywhere else that carries the placeholder in any header is
// refused, so no component ever holds the key.
type Gateway struct {
	Endpoint    string // the gateway's base URL
	Placeholder string
	Key         string
}

// Policy is the gateway grant as an HTTPPolicy. A malformed endpoint
// allows nothing.
func (g Gateway) Policy() HTTPPolicy {
	origin := ""
	if i := strings.Index(g.Endpoint, "://"); i > 0 {
		rest := g.Endpoint[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			rest = rest[:j]
		}
		origin = strings.ToLower(g.Endpoint[:i]) + "://" + strings.ToLower(rest)
	}
	return func(_ context.Context, req *wasihttp.Request) error {
		carries := false
		for _, h := range req.Headers {
			if g.Placeholder != "" && strings.Contains(h[1], g.Placeholder) {
				carries = true
			}
		}
		if origin == "" || !sameOrigin(req.Origin(), origin) {
			if carries {
				return fmt.Errorf("%s carries the inference API key placeholder and is not the gateway endpoint %s", req.Origin(), g.Endpoint)
			}
			return fmt.Errorf("%s is not the gateway endpoint; a driver reaches gateway.endpoint (%s) only", req.Origin(), g.Endpoint)
		}
		if g.Placeholder == "" {
			return nil
		}
		for i, h := range req.Headers {
			switch strings.ToLower(h[0]) {
			case "x-api-key", "authorization":
				req.Headers[i][1] = strings.ReplaceAll(h[1], g.Placeholder, g.Key)
			}
		}
		return nil
	}
}

// sameOrigin compares scheme://authority, the default port implied.
func sameOrigin(a, b string) bool {
	return normOrigin(a) == normOrigin(b)
}

func normOrigin(o string) string {
	o = strings.ToLower(o)
	switch {
	case strings.HasPrefix(o, "https://") && strings.HasSuffix(o, ":443"):
		return strings.TrimSuffix(o, ":443")
	case strings.HasPrefix(o, "http://") && strings.HasSuffix(o, ":80"):
		return strings.TrimSuffix(o, ":80")
	}
	return o
}

// HTTPBounds are the §17 bounds of one grant.
type HTTPBounds struct {
	MaxBodyBytes int64
	MaxInFlight  int
}

// DefaultHTTPBounds are the contract's bounds, the body bound from
// mur's environment.
func DefaultHTTPBounds() HTTPBounds {
	return HTTPBounds{MaxBodyBytes: HTTPMaxBodyBytes(nil), MaxInFlight: HTTPMaxInFlight}
}

// HTTPDenied is the message of the log line a refused request writes: a
// session routes such lines to its own log by it.
const HTTPDenied = "wasi:http request denied"

// GrantHTTP grants wasi:http on h with the default bounds, deciding each
// request with policy (nil: DenyAllHTTP). log receives one line per refused
// request, naming the URL and the key to edit (nil: slog.Default()).
func GrantHTTP(h *wasmhost.Host, policy HTTPPolicy, log *slog.Logger) {
	GrantHTTPBounded(h, policy, log, DefaultHTTPBounds())
}

// GrantHTTPBounded is GrantHTTP with explicit bounds.
func GrantHTTPBounded(h *wasmhost.Host, policy HTTPPolicy, log *slog.Logger, b HTTPBounds) {
	grantHTTP(h, nil, policy, log, b)
}

// GrantHTTPMember is GrantHTTPBounded for a component of a session that
// may be a formation member (a script, a tool, a hook; not a driver, which
// reaches its gateway only): a request to a callee's virtual address
// (formation.Callees.Route) goes to the callee's door with the edge's
// token and origin peer, whatever policy says; any other host under
// formation.invalid is refused before any connection and logged as policy's
// refusals are. callees nil (no member, or no callees) refuses them all.
func GrantHTTPMember(h *wasmhost.Host, callees *formation.Callees, policy HTTPPolicy, log *slog.Logger, b HTTPBounds) {
	grantHTTP(h, func(ctx context.Context, req *wasihttp.Request) (*wasihttp.Virtual, error) {
		scheme, _, _ := strings.Cut(req.Origin(), "://") // unset is https
		t, err := callees.Route(ctx, scheme, req.Authority)
		if t == nil || err != nil {
			return nil, err
		}
		return &wasihttp.Virtual{Scheme: t.Scheme, Authority: t.Authority, Headers: t.Headers()}, nil
	}, policy, log, b)
}

func grantHTTP(h *wasmhost.Host, route func(context.Context, *wasihttp.Request) (*wasihttp.Virtual, error), policy HTTPPolicy, log *slog.Logger, b HTTPBounds) {
	if policy == nil {
		policy = DenyAllHTTP
	}
	if log == nil {
		log = slog.Default()
	}
	denied := func(req *wasihttp.Request, err error) error {
		log.Info(HTTPDenied, "method", req.Method, "url", req.URL(), "reason", err.Error())
		return err
	}
	g := wasihttp.Grant{
		Decide: func(ctx context.Context, req *wasihttp.Request) error {
			if err := policy(ctx, req); err != nil {
				return denied(req, err)
			}
			return nil
		},
		MaxBodyBytes: b.MaxBodyBytes,
		MaxInFlight:  b.MaxInFlight,
	}
	if route != nil {
		g.Route = func(ctx context.Context, req *wasihttp.Request) (*wasihttp.Virtual, error) {
			// The line names the virtual URL the component asked for: it
			// never holds, or learns, the real one.
			v, err := route(ctx, req)
			if err != nil {
				return nil, denied(req, err)
			}
			return v, nil
		}
	}
	wasihttp.Enable(h, g)
}
