package replay

// Rewind starts d's transcript over, so a benchmark can replay it forever.
func Rewind(d *Driver) {
	d.mu.Lock()
	d.next = 0
	d.mu.Unlock()
}
