// Package wasihttp is the Go guest kit's net/http client: a RoundTripper
// over wasi:http@0.2.12 (the host answers it within the capsule's or tool's
// capabilities.network.allow), so a component makes requests as Go code
// does anywhere. It is built on guest/httpcore, which has the same requests
// without net/http; it is a package of its own so that only components that
// want net/http link it (several MB of component, and its package inits at
// every instantiation).
package wasihttp

import "github.com/murmur-go/murmur/guest/httpcore"

// Error is a request the host answered with a wasi:http error-code, such as
// HTTP-request-denied (the manifest's capabilities.network.allow does not
// cover the URL) or HTTP-response-body-size.
type Error = httpcore.Error
