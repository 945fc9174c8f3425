package wasmhost

/*
#cgo CFLAGS: -I${SRCDIR}/include -O2
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	// Links libwasmtime.a: its cgo LDFLAGS carry the library path and
	// -lwasmtime. We call the C API ourselves, with the headers vendored
	// under include/ (pinned to the same module version, see headers_test.go).
	_ "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/murmur-go/murmur/internal/diag"
)

// wasmtimeVersion is the wasmtime release whose C API and static library this
// package is built against (github.com/bytecodealliance/wasmtime-go/v39@v39.0.1).
const wasmtimeVersion = "39.0.1"

// engineSettings names every engine option that changes compiled code. It is
// part of the compile cache key: a cache written under other settings is
// never loaded.
const engineSettings = "cranelift;opt=speed;component-model;epoch-interruption;memory-creator=murmur-v1;cow=off;data=coalesced-v1;image=v1;fields=ptr-len-v1"

// defaultTick is how often the engine's epoch advances: the granularity of
// deadlines for guests running their own code.
const defaultTick = 10 * time.Millisecond

// Config configures an Engine.
type Config struct {
	// CacheDir holds compiled components; it is created (0700) when
	// missing. It is the caller's choice (Murmur passes home.Compiled) and
	// required unless NoCache is set.
	CacheDir string
	// KeyFile is the cache's MAC key, kept outside CacheDir so that whoever
	// can read the cache directory cannot forge an entry (Murmur passes
	// home.CacheKey). "" keeps the key in CacheDir (tests). The file is
	// created 0600 in a 0700 directory, and one not owned by this user, or
	// readable by others, is refused.
	KeyFile string
	// NoCache disables the on-disk cache (every Compile compiles).
	NoCache bool
	// Tick overrides defaultTick.
	Tick time.Duration
	// OnCompile, when set, is called with CompileOptions.Name just before a
	// component is compiled by Cranelift (a cache miss: seconds for a Go
	// component), never for a cache hit, from the compiling goroutine. A CLI
	// prints "compiling <name>" from it.
	OnCompile func(name string)
	// Logger receives the engine's log lines (cache rebuilds, denied
	// requests). nil means slog.Default().
	Logger *slog.Logger
}

// Engine is wasmtime's compilation environment: one per process, shared by
// every component and instance (it is safe for concurrent use). A goroutine
// advances the epoch every tick for deadlines.
type Engine struct {
	e         *C.wasm_engine_t
	cacheDir  string
	cacheKey  []byte // HMAC key for cache files
	log       *slog.Logger
	onCompile func(string)
	stop      chan struct{}
	done      chan struct{}
	wake      chan struct{}
	active    atomic.Int64 // calls in progress: the ticker runs only then
	live      atomic.Int64 // open instances and compilations in progress (enter/leave)

	mu     sync.Mutex
	closed bool

	linkers sync.Map // import key -> *linkerEntry

	helperOnce sync.Once
	spoolOnce  sync.Once
	spool      *Component
	spoolErr   error
	helper     *Component // the deadline-aware clock's helper (clock.go), compiled on first need
	helperErr  error
	wasiOnce   sync.Once
	wasiLinker *C.wasmtime_component_linker_t // plain wasip2 linker (for the helper)
}

var backtraceOnce sync.Once

// NewEngine creates the engine (Cranelift, component model, epoch
// interruption, the murmur memory creator) and starts its epoch ticker.
func NewEngine(cfg Config) (*Engine, error) {
	backtraceOnce.Do(func() {
		// With RUST_BACKTRACE set, wasmtime captures a native backtrace for
		// every error and trap: slow and noisy.
		os.Setenv("RUST_LIB_BACKTRACE", "0")
	})
	eng := &Engine{log: cfg.Logger, onCompile: cfg.OnCompile}
	if eng.log == nil {
		eng.log = slog.Default()
	}
	if !cfg.NoCache {
		dir := cfg.CacheDir
		if dir == "" {
			return nil, diag.New("E-RUN-102", "no compiled-component cache directory given").
				WithHint("pass Config.CacheDir, or set Config.NoCache to compile every time")
		}
		key, err := openCache(dir, cfg.KeyFile)
		if err != nil {
			return nil, diag.Wrap(err, "E-RUN-102", "cannot use the compiled-component cache %s", dir).
				WithHint("make the directory writable by you (mode 0700), or remove it")
		}
		eng.cacheDir, eng.cacheKey = dir, key
	}

	cfgC := C.wasm_config_new()
	C.wasmtime_config_wasm_component_model_set(cfgC, true)
	C.wasmtime_config_epoch_interruption_set(cfgC, true)
	C.wasmtime_config_strategy_set(cfgC, C.WASMTIME_STRATEGY_CRANELIFT)
	C.wasmtime_config_cranelift_opt_level_set(cfgC, C.WASMTIME_OPT_LEVEL_SPEED)
	C.wh_config_memory(cfgC)
	eng.e = C.wasm_engine_new_with_config(cfgC) // takes ownership of cfgC
	if eng.e == nil {
		return nil, errors.New("wasmhost: wasmtime could not create an engine")
	}

	tick := cfg.Tick
	if tick <= 0 {
		tick = defaultTick
	}
	eng.stop, eng.done, eng.wake = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	go eng.ticker(tick)
	return eng, nil
}

// ticker advances the epoch while any call is in progress and sleeps
// otherwise, so an idle process (a daemon holding an engine) does not wake
// 100 times a second for nothing.
func (e *Engine) ticker(d time.Duration) {
	defer close(e.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		if e.active.Load() == 0 {
			t.Stop()
			select {
			case <-e.stop:
				return
			case <-e.wake:
			}
			t.Reset(d)
		}
		select {
		case <-e.stop:
			return
		case <-t.C:
			C.wasmtime_engine_increment_epoch(e.e)
		}
	}
}

// callStarted/callEnded bracket every instantiation and call.
func (e *Engine) callStarted() {
	if e.active.Add(1) == 1 {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

func (e *Engine) callEnded() { e.active.Add(-1) }

// Close stops the ticker and frees the engine. Every instance made from it
// must be closed first (Close refuses otherwise); components should be.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	if n := e.live.Load(); n > 0 {
		// Freeing the engine under live instances would crash the process
		// later; refuse and keep everything alive instead.
		return fmt.Errorf("wasmhost: engine still has %d open instances or compilations", n)
	}
	e.closed = true
	close(e.stop)
	<-e.done
	if e.helper != nil {
		e.helper.Close()
	}
	e.linkers.Range(func(_, v any) bool {
		v.(*linkerEntry).free()
		return true
	})
	if e.wasiLinker != nil {
		C.wasmtime_component_linker_delete(e.wasiLinker)
	}
	C.wasm_engine_delete(e.e)
	return nil
}

// enter registers an instance or a compilation, so Close cannot free the
// engine under it; it fails on a closed engine. Close and enter hold e.mu, so
// an Instantiate or Compile racing with Close either runs on a live engine or
// gets ErrClosed.
func (e *Engine) enter() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.live.Add(1)
	return nil
}

func (e *Engine) leave() { e.live.Add(-1) }

// errorText returns and frees a wasmtime error's message.
func errorText(err *C.wasmtime_error_t) string {
	var msg C.wasm_name_t
	C.wasmtime_error_message(err, &msg)
	s := goName(&msg)
	C.wasm_byte_vec_delete(&msg)
	C.wasmtime_error_delete(err)
	return s
}

// cError makes a wasmtime error carrying msg (wasmtime frees it).
func cError(msg string) *C.wasmtime_error_t {
	cs := C.CString(msg)
	defer C.free(unsafe.Pointer(cs))
	return C.wasmtime_error_new(cs)
}

// plainWasiLinker is a linker with nothing but wasip2, used to instantiate
// the clock helper in a run's store.
func (e *Engine) plainWasiLinker() *C.wasmtime_component_linker_t {
	e.wasiOnce.Do(func() {
		l := C.wasmtime_component_linker_new(e.e)
		if err := C.wasmtime_component_linker_add_wasip2(l); err != nil {
			panic("wasmhost: add_wasip2: " + errorText(err))
		}
		e.wasiLinker = l
	})
	return e.wasiLinker
}

func goErr(prefix string, err *C.wasmtime_error_t) error {
	return fmt.Errorf("%s: %s", prefix, errorText(err))
}

var _ = runtime.KeepAlive
