// Package remote runs a built-in provider driver in a helper process of its
// own (cmd/mur-driver) and speaks to it over the helper's stdin and stdout. A
// mur built with the murdriver tag (the split build scripts/install.sh
// installs) uses it so that it does not link the provider SDKs: their package
// initialisation, their half of the binary and the pages both touch are paid
// by every mur process, agent or not (RATIONALE.md). A plain mur build links
// them and does not use this package.
//
// The wire is one JSON object a line. The first line mur writes carries the
// helper stamp and the driver's Config; the helper answers with the driver's
// Info or the error New returned, then serves calls until its stdin ends.
// Each call has an id: mur writes {"id","call"} and later, if the call's
// context ends first, {"id","cancel":true}; the helper answers with any number
// of {"id","chunk"} lines, in order, then one {"id","result"} or
// {"id","error"}. Calls may overlap; the helper answers each as it finishes.
// The request and response are the driver protocol's own JSON (docs/drivers.md).
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/version"
)

// HelperName is the helper binary mur looks for beside itself.
const HelperName = "mur-driver"

// CodeHelper is the diagnostic of a provider built-in whose helper cannot be
// used: missing beside mur, from another build, or failed to start.
const CodeHelper = "E-RUN-059"

// protocol numbers the wire's shape; change it with the wire.
const protocol = 1

// maxLine bounds one line of the wire: a request carries the whole
// conversation, so it is generous, but a helper gone wrong cannot make mur
// buffer without end.
const maxLine = 256 << 20

// Stamp identifies this build's helper protocol: the helper serves only a mur
// whose stamp is exactly its own, and mur refuses a helper whose is not.
func Stamp() string {
	return "protocol " + strconv.Itoa(protocol) + " " + version.Revision()
}

type hello struct {
	Stamp  string        `json:"stamp"`
	Config driver.Config `json:"config"`
}

type frame struct {
	ID     uint64           `json:"id,omitempty"`
	Call   *driver.Request  `json:"call,omitempty"`
	Cancel bool             `json:"cancel,omitempty"`
	Info   *driver.Info     `json:"info,omitempty"`
	Chunk  *string          `json:"chunk,omitempty"`
	Result *driver.Response `json:"result,omitempty"`
	Err    *wireError       `json:"error,omitempty"`
}

// wireError carries a *driver.Error (Kind set) or a diagnostic (Code set) or
// any other error (its text) across the pipe; Cause is the text of the
// wrapped error, so Error() reads the same on both sides.
type wireError struct {
	Kind     driver.Kind `json:"kind,omitempty"`
	Driver   string      `json:"driver,omitempty"`
	Status   int         `json:"status,omitempty"`
	Message  string      `json:"message"`
	Code     string      `json:"code,omitempty"`
	Hint     string      `json:"hint,omitempty"`
	Exit     int         `json:"exit,omitempty"`
	Cause    string      `json:"cause,omitempty"`
	Deadline bool        `json:"deadline,omitempty"`
	Canceled bool        `json:"canceled,omitempty"`
	Redirect bool        `json:"redirect,omitempty"`
}

func toWire(err error) *wireError {
	w := &wireError{Message: err.Error()}
	var de *driver.Error
	var dg *diag.Diagnostic
	var cause error
	switch {
	case errors.As(err, &de):
		w.Kind, w.Driver, w.Status, w.Message, cause = de.Kind, de.Driver, de.Status, de.Message, de.Err
	case errors.As(err, &dg):
		w.Code, w.Message, w.Hint, w.Exit, cause = dg.Code, dg.Message, dg.Hint, dg.Exit, dg.Err
	}
	if cause != nil {
		w.Cause = cause.Error()
	}
	w.Deadline = errors.Is(err, context.DeadlineExceeded)
	w.Canceled = errors.Is(err, context.Canceled)
	w.Redirect = errors.Is(err, driver.ErrRedirect)
	return w
}

func (w *wireError) error() error {
	var cause error
	switch {
	case w.Deadline:
		cause = wrapped{w.Cause, context.DeadlineExceeded}
	case w.Canceled:
		cause = wrapped{w.Cause, context.Canceled}
	case w.Redirect:
		cause = wrapped{w.Cause, driver.ErrRedirect}
	case w.Cause != "":
		cause = errors.New(w.Cause)
	}
	switch {
	case w.Kind != 0:
		return &driver.Error{Kind: w.Kind, Driver: w.Driver, Status: w.Status, Message: w.Message, Err: cause}
	case w.Code != "":
		return &diag.Diagnostic{Code: w.Code, Message: w.Message, Hint: w.Hint, Exit: w.Exit, Err: cause}
	case cause != nil:
		return cause
	default:
		return errors.New(w.Message)
	}
}

// wrapped keeps a cause's text while errors.Is still finds the sentinel the
// helper's error wrapped.
type wrapped struct {
	text string
	is   error
}

func (w wrapped) Error() string {
	if w.text == "" {
		return w.is.Error()
	}
	return w.text
}
func (w wrapped) Unwrap() error { return w.is }

// Serve is the helper's side: it reads the hello line from in, constructs the
// driver with open, and serves calls until in ends, when it cancels whatever
// is still running and returns. A hello with another stamp is answered with
// an error and refused.
func Serve(in io.Reader, out io.Writer, open func(driver.Config) (driver.Driver, error)) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var wmu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(f frame) {
		wmu.Lock()
		defer wmu.Unlock()
		enc.Encode(f) // a write fails only once mur is gone; its stdin ends next
	}
	if !sc.Scan() {
		return fmt.Errorf("mur-driver: no hello line: %v", sc.Err())
	}
	var h hello
	if err := unmarshalNumbers(sc.Bytes(), &h); err != nil {
		send(frame{Err: toWire(fmt.Errorf("mur-driver: the hello line does not parse: %w", err))})
		return err
	}
	if h.Stamp != Stamp() {
		err := fmt.Errorf("mur-driver is %s but mur is %s", Stamp(), h.Stamp)
		send(frame{Err: &wireError{Code: CodeHelper, Message: err.Error()}})
		return err
	}
	d, err := open(h.Config)
	if err != nil {
		send(frame{Err: toWire(err)})
		return nil
	}
	info := d.Info()
	send(frame{Info: &info})

	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	running := map[uint64]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }() // mur is gone: nothing waits for an answer
	for sc.Scan() {
		var f frame
		if err := unmarshalNumbers(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("mur-driver: a line does not parse: %w", err)
		}
		if f.Cancel {
			mu.Lock()
			if c := running[f.ID]; c != nil {
				c()
			}
			mu.Unlock()
			continue
		}
		if f.Call == nil {
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		mu.Lock()
		running[f.ID] = cancel
		mu.Unlock()
		wg.Add(1)
		go func(id uint64, req *driver.Request) {
			defer wg.Done()
			resp, err := d.Call(cctx, req, func(text string) { send(frame{ID: id, Chunk: &text}) })
			mu.Lock()
			delete(running, id)
			mu.Unlock()
			cancel()
			if err != nil {
				send(frame{ID: id, Err: toWire(err)})
				return
			}
			send(frame{ID: id, Result: resp})
		}(f.ID, f.Call)
	}
	return sc.Err()
}

// unmarshalNumbers decodes with numbers kept as written (json.Number): a
// request's params and a config's settings reach the driver's JSON exactly
// as mur had them, an integer past 2^53 included.
func unmarshalNumbers(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	return dec.Decode(v)
}

var (
	pinOnce sync.Once
	pinned  *command.Pinned
)

// Pin opens the helper beside the running executable once, if it is there:
// Locate then hands out that file by its descriptor, so a mur-driver
// replaced on disk after the runtime started (it receives the provider's
// key) is never run. The runtime calls it at start; Locate makes it
// otherwise.
func Pin() {
	pinOnce.Do(func() {
		if exe, err := os.Executable(); err == nil {
			if p, err := Find(exe, ""); err == nil {
				pinned, _ = command.Pin(p)
			}
		}
	})
}

// Locate is the helper beside the running executable (Find), as the path
// of its pinned descriptor (Pin).
func Locate(name string) (string, error) {
	Pin()
	exe, err := os.Executable()
	if err != nil {
		return "", diag.Wrap(err, CodeHelper, "the built-in driver %s runs in %s, and mur cannot tell where it is installed", name, HelperName)
	}
	if pinned == nil {
		return Find(exe, name)
	}
	p, err := pinned.Path()
	if err != nil {
		return "", diag.Wrap(err, CodeHelper, "the built-in driver %s runs in %s", name, HelperName).
			WithHint("start mur again: it runs the %s that is installed when it starts", HelperName)
	}
	return p, nil
}

// Find is the helper beside exe (mur's own path): its path, or a coded
// refusal naming where it was looked for.
func Find(exe, name string) (string, error) {
	p := filepath.Join(filepath.Dir(exe), HelperName)
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return "", diag.New(CodeHelper, "the built-in driver %s runs in %s, which is not installed beside mur (%s)", name, HelperName, p).
			WithHint("install mur with scripts/install.sh, which puts %s beside it, or build it there: go build -o %s ./cmd/%s", HelperName, filepath.Dir(exe), HelperName)
	}
	return p, nil
}

// Driver is a built-in served by a helper process. It is safe for concurrent
// calls; Close ends the helper.
type Driver struct {
	info  driver.Info
	cmd   *exec.Cmd
	stdin io.WriteCloser

	wmu sync.Mutex // one line at a time on stdin
	enc *json.Encoder

	mu      sync.Mutex
	next    uint64
	calls   map[uint64]*call
	dead    error // set once the helper's stdout ended
	closing bool
	done    chan struct{}
}

type call struct {
	chunk  driver.ChunkFunc
	chunks chan string   // delivered in order by the call's own goroutine
	end    chan *frame   // the result or error frame
	gone   chan struct{} // closed when the call returned early
	once   sync.Once
}

// Start starts the helper at path and constructs the built-in cfg names in it.
// The error of the driver's own constructor comes back as it was (its
// diagnostic code and hint); a helper that cannot start or answers with
// another stamp is CodeHelper.
func Start(path string, cfg driver.Config) (*Driver, error) {
	cmd := exec.Command(path, "serve")
	// The environment is mur's own, as the in-process drivers had it (the
	// TLS roots' SSL_CERT_FILE and SSL_CERT_DIR); the key arrives on the pipe.
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, diag.Wrap(err, CodeHelper, "%s cannot start", path)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, diag.Wrap(err, CodeHelper, "%s cannot start", path)
	}
	if err := cmd.Start(); err != nil {
		return nil, diag.Wrap(err, CodeHelper, "%s cannot start", path).
			WithHint("reinstall mur with scripts/install.sh")
	}
	d := &Driver{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), calls: map[uint64]*call{}, done: make(chan struct{})}
	fail := func(err error) (*Driver, error) {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	if err := d.enc.Encode(hello{Stamp: Stamp(), Config: cfg}); err != nil {
		return fail(diag.Wrap(err, CodeHelper, "%s does not read its input", path).WithHint("reinstall mur with scripts/install.sh"))
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	if !sc.Scan() {
		return fail(diag.New(CodeHelper, "%s ended without answering (%v)", path, sc.Err()).WithHint("reinstall mur with scripts/install.sh"))
	}
	var f frame
	if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
		return fail(diag.Wrap(err, CodeHelper, "%s answered something that is not its protocol", path).WithHint("reinstall mur with scripts/install.sh"))
	}
	if f.Err != nil {
		err := f.Err.error()
		if f.Err.Code == CodeHelper {
			err = diag.New(CodeHelper, "%s cannot serve this mur: %s", path, f.Err.Message).
				WithHint("install mur and %s from one build (scripts/install.sh)", HelperName)
		}
		return fail(err)
	}
	if f.Info == nil {
		return fail(diag.New(CodeHelper, "%s answered without the driver's info", path).WithHint("reinstall mur with scripts/install.sh"))
	}
	d.info = *f.Info
	go d.read(sc)
	return d, nil
}

// read delivers the helper's lines to their calls until its stdout ends.
func (d *Driver) read(sc *bufio.Scanner) {
	defer close(d.done)
	for sc.Scan() {
		f := new(frame)
		if err := json.Unmarshal(sc.Bytes(), f); err != nil {
			d.kill(fmt.Errorf("%s answered a line that is not its protocol: %w", HelperName, err))
			break
		}
		d.mu.Lock()
		c := d.calls[f.ID]
		if c != nil && f.Chunk == nil {
			delete(d.calls, f.ID)
		}
		d.mu.Unlock()
		if c == nil {
			continue // a call already given up on (its context ended)
		}
		if f.Chunk != nil {
			select {
			case c.chunks <- *f.Chunk:
			case <-c.gone:
			}
			continue
		}
		c.end <- f
	}
	err := sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	d.kill(fmt.Errorf("%s ended: %w", HelperName, err))
}

// kill fails every pending call with err, once the helper cannot answer.
func (d *Driver) kill(err error) {
	d.mu.Lock()
	if d.dead == nil {
		d.dead = err
	}
	calls := d.calls
	d.calls = map[uint64]*call{}
	d.mu.Unlock()
	for _, c := range calls {
		c.once.Do(func() { close(c.end) })
	}
}

// Info names the driver as the helper's constructor did.
func (d *Driver) Info() driver.Info { return d.info }

// Call sends req to the helper and waits for its answer, passing streamed
// text to chunk in order. When ctx ends first the helper is told to cancel
// and the call returns the driver protocol's canceled error.
func (d *Driver) Call(ctx context.Context, req *driver.Request, chunk driver.ChunkFunc) (*driver.Response, error) {
	c := &call{chunk: chunk, chunks: make(chan string, 64), end: make(chan *frame, 1), gone: make(chan struct{})}
	defer close(c.gone)
	d.mu.Lock()
	if d.dead != nil {
		err := d.dead
		d.mu.Unlock()
		return nil, &driver.Error{Kind: driver.KindUnreachable, Driver: d.info.Name, Message: "the driver helper is gone", Err: err}
	}
	d.next++
	id := d.next
	d.calls[id] = c
	d.mu.Unlock()
	if err := d.write(frame{ID: id, Call: req}); err != nil {
		d.forget(id)
		return nil, &driver.Error{Kind: driver.KindUnreachable, Driver: d.info.Name, Message: "the driver helper does not read its input", Err: err}
	}
	for {
		select {
		case text := <-c.chunks:
			if c.chunk != nil {
				c.chunk(text)
			}
		case f, ok := <-c.end:
			// Chunks sent before the end are delivered first: the reader
			// queued them before this frame.
			for len(c.chunks) > 0 {
				if text := <-c.chunks; c.chunk != nil {
					c.chunk(text)
				}
			}
			if !ok {
				d.mu.Lock()
				err := d.dead
				d.mu.Unlock()
				return nil, &driver.Error{Kind: driver.KindUnreachable, Driver: d.info.Name, Message: "the driver helper ended during the call", Err: err}
			}
			if f.Err != nil {
				return nil, f.Err.error()
			}
			if f.Result == nil {
				return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the driver helper answered without a result"}
			}
			return f.Result, nil
		case <-ctx.Done():
			d.forget(id)
			d.write(frame{ID: id, Cancel: true})
			return nil, driver.Canceled(d.info.Name, ctx)
		}
	}
}

func (d *Driver) forget(id uint64) {
	d.mu.Lock()
	delete(d.calls, id)
	d.mu.Unlock()
}

func (d *Driver) write(f frame) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return d.enc.Encode(f)
}

// closeGrace is how long Close waits for the helper to end its calls and
// exit before it kills it.
const closeGrace = 5 * time.Second

// Close ends the helper: its stdin closes, it cancels what still runs and
// exits; Close waits for that, and kills a helper still there after
// closeGrace.
func (d *Driver) Close() {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return
	}
	d.closing = true
	d.mu.Unlock()
	d.stdin.Close()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-d.done:
	case <-t.C:
		d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd.Wait()
}
