// Package docs carries the pages of the user documentation that mur prints
// itself: diagnostics.md, for `mur explain CODE`. The Markdown file is the
// one source; this package only embeds it.
package docs

import _ "embed"

// Diagnostics is docs/diagnostics.md.
//
//go:embed diagnostics.md
var Diagnostics string
