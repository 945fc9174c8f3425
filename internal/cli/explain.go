package cli

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/docs"
	"github.com/murmur-go/murmur/internal/diag"
)

func init() { register(newExplainCmd) }

func newExplainCmd(stdout, _ io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "explain CODE",
		Short: "Print what a diagnostic code means and what to do about it",
		Long: `Print the entry of docs/diagnostics.md for CODE (such as E-RUN-013 or
W-SEC-007): its cause and its fix. The text is that page's own, built into mur.`,
		Example: "  mur explain E-RUN-013",
		Args:    exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return explain(stdout, args[0])
		},
	}
}

// diagRow is one row of the codes table: | code | cause | fix |.
var diagRow = regexp.MustCompile(`^\|\s*([EW]-[A-Z]+-[0-9]{3})\s*\|(.*)\|\s*$`)

// diagEntries reads the codes table of docs/diagnostics.md: code → cause, fix.
func diagEntries() map[string][2]string {
	out := map[string][2]string{}
	for _, l := range strings.Split(docs.Diagnostics, "\n") {
		m := diagRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		// Cells are split on | not escaped as \|.
		cells := regexp.MustCompile(`\s*(?:^|[^\\])\|\s*`).Split(" "+m[2]+" ", -1)
		cause, fix := "", ""
		if len(cells) > 0 {
			cause = unescapeCell(cells[0])
		}
		if len(cells) > 1 {
			fix = unescapeCell(strings.Join(cells[1:], " | "))
		}
		out[m[1]] = [2]string{cause, fix}
	}
	return out
}

func unescapeCell(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, `\|`, "|")) }

func explain(w io.Writer, code string) error {
	code = strings.ToUpper(strings.TrimSpace(code))
	entries := diagEntries()
	e, ok := entries[code]
	if !ok {
		var near []string
		for c := range entries {
			if diag.EditDistance(c, code) <= 2 {
				near = append(near, c)
			}
		}
		sort.Strings(near)
		d := diag.New("E-RUN-200", "docs/diagnostics.md has no entry for %q", code)
		if len(near) > 0 {
			return d.WithHint("did you mean %s?", strings.Join(near, ", "))
		}
		return d.WithHint("a code looks like E-RUN-013 or W-SEC-007, as printed in error[…] and warning[…]")
	}
	_, err := fmt.Fprintf(w, "%s\n\ncause: %s\n\nfix:   %s\n\n(docs/diagnostics.md)\n", code, e[0], e[1])
	return err
}
