package trace

// Only tests summarize a trace read whole; the commands stream it (SummarizeFile).

// Summarize reads the facts a summary shows out of a trace read whole,
// keeping every tool_call and shell line.
func Summarize(f *File) Summary {
	z := NewSummarizer(true)
	for _, l := range f.Lines {
		z.Add(l)
	}
	return z.Summary(ScanResult{Events: len(f.Lines), Truncated: f.Truncated, BadCount: len(f.Bad), Bad: f.Bad})
}
