package remote

// Kill ends d's helper process as a crash would.
func Kill(d *Driver) { d.cmd.Process.Kill() }
