package telemetry

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
)

// EnvMurmurEndpoint is trace.EnvCollector: it wins over the standard
// variables below, and the manifest's endpoint over it.
const EnvMurmurEndpoint = trace.EnvCollector

// The OpenTelemetry SDKs' standard OTLP exporter variables; the _TRACES_
// form of each, when set, is used instead of the general one.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout        = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout  = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
)

const defaultExportTimeout = 2 * time.Second

// Wanted reports whether a session exports spans: its manifest sets
// observability.otel_endpoint, or the environment names an OTLP endpoint.
func Wanted(manifestEndpoint string) bool {
	return strings.TrimSpace(manifestEndpoint) != "" || os.Getenv(EnvMurmurEndpoint) != "" ||
		os.Getenv(EnvTracesEndpoint) != "" || os.Getenv(EnvEndpoint) != ""
}

// exportTarget is where one session's spans are posted and how.
type exportTarget struct {
	url     string        // the full URL, …/v1/traces
	base    string        // what otel.log names as the endpoint
	headers http.Header   // from the environment; nil for the manifest's endpoint
	timeout time.Duration // one POST
	notes   []string      // variables that were set but ignored, for otel.log
}

// resolveTarget decides the collector URL, headers and timeout.
//
// The manifest's endpoint wins over the environment's. The environment's
// headers often carry a collector's credentials, so they are sent only to an
// endpoint that also came from the environment, never to one a capsule's
// manifest names. A timeout given by the caller wins over the environment's,
// which wins over the default. Values that do not parse are ignored and said
// in otel.log, as the OTel SDKs do.
func resolveTarget(manifestEndpoint string, timeout time.Duration, getenv func(string) string) (exportTarget, error) {
	var t exportTarget
	if ep := strings.TrimRight(strings.TrimSpace(manifestEndpoint), "/"); ep != "" {
		if !isHTTPURL(ep) {
			return t, fmt.Errorf("observability.otel_endpoint %q is not an http:// or https:// URL", ep)
		}
		t.url, t.base = ep+"/v1/traces", ep
		if _, err := url.Parse(t.url); err != nil {
			return t, fmt.Errorf("observability.otel_endpoint %q: %w", ep, err)
		}
	} else {
		// The signal's own variable is the whole URL; the general one is a
		// base the signal's path is added to (the SDKs' rule).
		name, ep := EnvMurmurEndpoint, strings.TrimRight(strings.TrimSpace(getenv(EnvMurmurEndpoint)), "/")
		t.url, t.base = ep+"/v1/traces", ep
		if ep == "" {
			name, ep = EnvTracesEndpoint, strings.TrimSpace(getenv(EnvTracesEndpoint))
			t.url, t.base = ep, ep
		}
		if ep == "" {
			name, ep = EnvEndpoint, strings.TrimRight(strings.TrimSpace(getenv(EnvEndpoint)), "/")
			t.url, t.base = ep+"/v1/traces", ep
		}
		if ep == "" {
			return t, fmt.Errorf("no endpoint: neither observability.otel_endpoint nor %s nor %s is set", EnvMurmurEndpoint, EnvEndpoint)
		}
		if !isHTTPURL(ep) {
			return t, fmt.Errorf("%s %q is not an http:// or https:// URL", name, ep)
		}
		if _, err := url.Parse(t.url); err != nil {
			return t, fmt.Errorf("%s %q: %w", name, ep, err)
		}
		hname, hv := EnvTracesHeaders, getenv(EnvTracesHeaders)
		if hv == "" {
			hname, hv = EnvHeaders, getenv(EnvHeaders)
		}
		t.headers, t.notes = parseHeaders(hname, hv, t.notes)
	}
	t.timeout = timeout
	if t.timeout <= 0 {
		t.timeout = defaultExportTimeout
		tname, tv := EnvTracesTimeout, getenv(EnvTracesTimeout)
		if tv == "" {
			tname, tv = EnvTimeout, getenv(EnvTimeout)
		}
		if tv != "" {
			// Milliseconds, as the SDKs read it.
			if ms, err := strconv.ParseInt(strings.TrimSpace(tv), 10, 64); err == nil && ms > 0 {
				t.timeout = time.Duration(ms) * time.Millisecond
			} else {
				t.notes = append(t.notes, fmt.Sprintf("%s=%q is not a positive number of milliseconds; the export timeout is %s", tname, tv, t.timeout))
			}
		}
	}
	return t, nil
}

func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// parseHeaders reads the variables' form: comma-separated key=value pairs,
// each value percent-encoded (the W3C Baggage list format). A pair that does
// not parse is skipped and noted; its value is not repeated, since it may be
// a credential.
func parseHeaders(name, v string, notes []string) (http.Header, []string) {
	if strings.TrimSpace(v) == "" {
		return nil, notes
	}
	h := http.Header{}
	for i, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		var err error
		if ok {
			val, err = url.PathUnescape(strings.TrimSpace(val))
		}
		if !ok || err != nil || !validHeaderName(k) || !validHeaderValue(val) {
			notes = append(notes, fmt.Sprintf("%s: entry %d is not key=value with a header name and a percent-encoded value; skipped", name, i+1))
			continue
		}
		h.Add(k, val)
	}
	return h, notes
}

// validHeaderName is RFC 9110's token.
func validHeaderName(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// validHeaderValue refuses control characters, which the HTTP client would
// refuse on every export.
func validHeaderValue(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
