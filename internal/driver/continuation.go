package driver

// Continuation carries a driver's continuation_id from one turn of a task to
// the next (docs/drivers.md): a response with a ContinuationID makes the next
// request carry that id and only the messages added to the conversation
// since the request that got it (the assistant message built from that
// response, then the tool results); a response without one makes the next
// request resend the whole conversation. The loop keeps one per task; the
// zero value is ready. It works with any driver.Driver: the built-ins never
// answer a ContinuationID, so for them every request is the whole
// conversation.
//
// Use, per turn:
//
//	req := c.Next(full) // full: the task's whole conversation so far
//	resp, err := d.Call(ctx, req, chunk)
//	c.Got(resp)         // after a successful call only
//
// A failed call leaves the continuation as it was, so a retried turn sends
// the same request. Reset drops the id (when the loop rewrites the history,
// e.g. compaction): the next request is the whole conversation again.
// Token accounting is the same either way: usage is the driver's answer.
type Continuation struct {
	id string
	// sent is how many messages of the conversation the driver already has:
	// those of the request that got id.
	sent int
	// pending is len(full.Messages) of the last Next.
	pending int
}

// Next returns the request to send for the conversation full: full itself
// when there is no id, else a copy carrying the id and only the messages
// after the ones the driver already has. full is not modified.
func (c *Continuation) Next(full *Request) *Request {
	c.pending = len(full.Messages)
	if c.id == "" || c.sent > len(full.Messages) {
		// No id, or a conversation shorter than what the driver holds (the
		// history was rewritten without Reset): resend it whole.
		if full.ContinuationID == "" {
			return full
		}
		r := *full
		r.ContinuationID = ""
		return &r
	}
	r := *full
	r.ContinuationID = c.id
	r.Messages = full.Messages[c.sent:len(full.Messages):len(full.Messages)]
	return &r
}

// Got records the response of the request Next last returned.
func (c *Continuation) Got(resp *Response) {
	if resp == nil || resp.ContinuationID == "" {
		c.id, c.sent = "", 0
		return
	}
	c.id, c.sent = resp.ContinuationID, c.pending
}

// ID is the continuation id the next request will carry, "" for none.
func (c *Continuation) ID() string { return c.id }

// Reset drops the continuation id: the next request is the whole
// conversation.
func (c *Continuation) Reset() { c.id, c.sent = "", 0 }
