package session

import (
	"strings"
	"testing"
)

// TestIdentityDocParentCopyLine: a child with a workdir snapshot has one
// line under ## Work folder — the copy's file count and size, and that its
// changes do not reach the parent; a session without one has none.
func TestIdentityDocParentCopyLine(t *testing.T) {
	for _, tc := range []struct {
		pc   *ParentCopy
		want string
	}{
		{nil, ""},
		{&ParentCopy{Files: 1, Bytes: 12}, "1 file, 12 bytes;"},
		{&ParentCopy{Files: 3, Bytes: 1023}, "3 files, 1023 bytes;"},
		{&ParentCopy{Files: 10000, Bytes: 200 << 20}, "10000 files, 200.0 MiB (209715200 bytes);"},
		{&ParentCopy{Files: 2, Bytes: 3 << 30}, "2 files, 3.0 GiB (3221225472 bytes);"},
	} {
		s := &Session{ID: "ses_0123456789abcdef0123456789abcdef", Name: "local/w", Version: "1.0.0", Workdir: "/w", parentCopy: tc.pc}
		doc := IdentityDoc(s, nil)
		work := doc[strings.Index(doc, "## Work folder"):]
		work = work[:strings.Index(work, "\n## ")]
		has := strings.Contains(work, "- snapshot: ")
		if tc.want == "" {
			if has {
				t.Errorf("a session with no snapshot has a snapshot line:\n%s", work)
			}
			continue
		}
		if !has || !strings.Contains(work, tc.want) || !strings.Contains(work, "changes here do not reach the parent's work folder") {
			t.Errorf("## Work folder lacks %q:\n%s", tc.want, work)
		}
	}
}
