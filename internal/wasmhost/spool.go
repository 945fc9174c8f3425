package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
)

// Body streams for wasi:http. The guest's input-stream and output-stream are
// wasip2's own resource types, which only wasip2 can mint, so a helper
// component instantiated in the run's store (like the clock helper) opens a
// file of the run's spool directory through wasi:filesystem and hands the
// stream to Go: open-read for a response body the host has spooled,
// open-write for a request body the guest fills. The spool directory is the
// last preopen (get-directories lists preopens in configuration order). It
// must be writable (wasip2 refuses open-at for writing in a directory
// without mutate rights), so the guest can also create files there: the
// directory is private to the run and removed with it (see RATIONALE.md).

const fsErrorCodes = `"access" "would-block" "already" "bad-descriptor" "busy" "deadlock" "quota" "exist"
 "file-too-large" "illegal-byte-sequence" "in-progress" "interrupted" "invalid" "io" "is-directory"
 "loop" "too-many-links" "message-size" "name-too-long" "no-device" "no-entry" "no-lock"
 "insufficient-memory" "insufficient-space" "not-directory" "not-empty" "not-recoverable"
 "unsupported" "no-tty" "no-such-device" "overflow" "not-permitted" "pipe" "read-only"
 "invalid-seek" "text-file-busy" "cross-device"`

const spoolHelperWAT = `(component
  (import "wasi:io/error@0.2.6" (instance $ioerr
    (export "error" (type (sub resource)))))
  (alias export $ioerr "error" (type $err))
  (import "wasi:io/streams@0.2.6" (instance $io
    (export "error" (type $e (eq $err)))
    (export "input-stream" (type $is (sub resource)))
    (export "output-stream" (type (sub resource)))
    (type $se' (variant (case "last-operation-failed" (own $e)) (case "closed")))
    (export "stream-error" (type $se (eq $se')))
    (export "[method]input-stream.read" (func (param "self" (borrow $is)) (param "len" u64)
      (result (result (list u8) (error $se)))))))
  (alias export $io "input-stream" (type $in))
  (alias export $io "output-stream" (type $out))
  (import "wasi:filesystem/types@0.2.6" (instance $fs
    (export "input-stream" (type $fin (eq $in)))
    (export "output-stream" (type $fout (eq $out)))
    (export "descriptor" (type $d (sub resource)))
    (type $ec' (enum ` + fsErrorCodes + `))
    (export "error-code" (type $ec (eq $ec')))
    (type $pf' (flags "symlink-follow"))
    (export "path-flags" (type $pf (eq $pf')))
    (type $of' (flags "create" "directory" "exclusive" "truncate"))
    (export "open-flags" (type $of (eq $of')))
    (type $df' (flags "read" "write" "file-integrity-sync" "data-integrity-sync" "requested-write-sync" "mutate-directory"))
    (export "descriptor-flags" (type $df (eq $df')))
    (type $fsz' u64)
    (export "filesize" (type $fsz (eq $fsz')))
    (export "[method]descriptor.open-at" (func (param "self" (borrow $d)) (param "path-flags" $pf) (param "path" string)
      (param "open-flags" $of) (param "flags" $df) (result (result (own $d) (error $ec)))))
    (export "[method]descriptor.read-via-stream" (func (param "self" (borrow $d)) (param "offset" $fsz)
      (result (result (own $fin) (error $ec)))))
    (export "[method]descriptor.write-via-stream" (func (param "self" (borrow $d)) (param "offset" $fsz)
      (result (result (own $fout) (error $ec)))))))
  (alias export $fs "descriptor" (type $desc))
  (import "wasi:filesystem/preopens@0.2.6" (instance $pre
    (export "descriptor" (type $pd (eq $desc)))
    (export "get-directories" (func (result (list (tuple (own $pd) string)))))))

  (core module $mem
    (memory (export "memory") 1)
    (global $bump (mut i32) (i32.const 1024))
    (func (export "reset") (global.set $bump (i32.const 1024)))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get 2))))
      (global.set $bump (i32.add (local.get $p) (local.get 3)))
      (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
        (then (if (i32.eq (memory.grow (i32.add (i32.shr_u (local.get 3) (i32.const 16)) (i32.const 1))) (i32.const -1))
          (then unreachable))))
      (local.get $p)))
  (core instance $m (instantiate $mem))
  (alias core export $m "memory" (core memory $memory))
  (alias core export $m "realloc" (core func $realloc))
  (core func $getdirs (canon lower (func $pre "get-directories") (memory $memory) (realloc $realloc)))
  (core func $openat (canon lower (func $fs "[method]descriptor.open-at") (memory $memory) (realloc $realloc)))
  (core func $rvs (canon lower (func $fs "[method]descriptor.read-via-stream") (memory $memory)))
  (core func $wvs (canon lower (func $fs "[method]descriptor.write-via-stream") (memory $memory)))
  (core func $dropd (canon resource.drop $desc))
  (core func $read (canon lower (func $io "[method]input-stream.read") (memory $memory) (realloc $realloc)))
  (core func $droperr (canon resource.drop $err))
  (core module $main
    (import "m" "memory" (memory 1))
    (import "m" "reset" (func $reset))
    (import "h" "getdirs" (func $getdirs (param i32)))
    (import "h" "openat" (func $openat (param i32 i32 i32 i32 i32 i32 i32)))
    (import "h" "rvs" (func $rvs (param i32 i64 i32)))
    (import "h" "wvs" (func $wvs (param i32 i64 i32)))
    (import "h" "dropd" (func $dropd (param i32)))
    (import "h" "read" (func $read (param i32 i64 i32)))
    (import "h" "droperr" (func $droperr (param i32)))
    ;; $dir: the helper's handle to the spool preopen, found on the first
    ;; call and kept (get-directories lowers every preopen's name).
    (global $dir (mut i32) (i32.const -1))
    ;; Results are written at 0 as result<T, u32> (tag u8 at 0, payload at
    ;; 4); u32 error codes: 1000 no preopen, an open-at error-code, 2000 + a
    ;; read-/write-via-stream error-code. The bump allocator is reset after
    ;; each call: the name and the preopen list are dead once open-at has
    ;; run, and the results lie below the allocator's base.
    (func $fail (param $code i32) (result i32)
      (i32.store8 (i32.const 0) (i32.const 1)) (i32.store (i32.const 4) (local.get $code))
      (i32.const -1))
    (func $ok (param $v i32) (result i32)
      (i32.store8 (i32.const 0) (i32.const 0)) (i32.store (i32.const 4) (local.get $v))
      (call $reset)
      (i32.const 0))
    ;; openat(name, write): a descriptor of the spool file name, or -1 with
    ;; the error at 0.
    (func $openat1 (param $p i32) (param $n i32) (param $write i32) (result i32)
      (local $list i32) (local $len i32) (local $i i32)
      (if (i32.eq (global.get $dir) (i32.const -1)) (then
        (call $getdirs (i32.const 16))
        (local.set $list (i32.load (i32.const 16)))
        (local.set $len (i32.load (i32.const 20)))
        (if (i32.eqz (local.get $len)) (then (return (call $fail (i32.const 1000)))))
        ;; keep the last preopen, drop the others
        (block $done (loop $l
          (br_if $done (i32.ge_u (local.get $i) (i32.sub (local.get $len) (i32.const 1))))
          (call $dropd (i32.load (i32.add (local.get $list) (i32.mul (local.get $i) (i32.const 12)))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $l)))
        (global.set $dir (i32.load (i32.add (local.get $list) (i32.mul (local.get $i) (i32.const 12)))))))
      (call $openat (global.get $dir) (i32.const 0) (local.get $p) (local.get $n) (i32.const 0)
        (select (i32.const 2) (i32.const 1) (local.get $write)) (i32.const 32))
      (if (i32.load8_u (i32.const 32)) (then (return (call $fail (i32.load8_u (i32.const 36))))))
      (i32.load (i32.const 36)))
    ;; stream(fd, write): a stream at offset 0 of fd, or -1 with the error.
    (func $stream1 (param $fd i32) (param $write i32) (result i32)
      (if (local.get $write)
        (then (call $wvs (local.get $fd) (i64.const 0) (i32.const 48)))
        (else (call $rvs (local.get $fd) (i64.const 0) (i32.const 48))))
      (if (i32.load8_u (i32.const 48)) (then
        (return (call $fail (i32.add (i32.const 2000) (i32.load8_u (i32.const 52)))))))
      (i32.load (i32.const 52)))
    ;; prime(stream): a non-blocking read of 64 KiB (wasmtime's largest),
    ;; which on a fresh file stream starts the read on wasmtime's blocking
    ;; pool and returns no bytes; the guest's own first read then finds the
    ;; bytes there. The result<list<u8>, stream-error> is at 64: an error's
    ;; own<error> (last-operation-failed) is dropped.
    (func $prime (param $s i32)
      (call $read (local.get $s) (i64.const 65536) (i32.const 64))
      (if (i32.load8_u (i32.const 64)) (then
        (if (i32.eqz (i32.load8_u (i32.const 68))) (then
          (call $droperr (i32.load (i32.const 72))))))))
    ;; open(name, write): a stream over the spool file name; its
    ;; descriptor is dropped (the stream keeps the file).
    (func $open (param $p i32) (param $n i32) (param $write i32) (result i32)
      (local $fd i32) (local $s i32)
      (local.set $fd (call $openat1 (local.get $p) (local.get $n) (local.get $write)))
      (if (i32.eq (local.get $fd) (i32.const -1)) (then (call $reset) (return (i32.const 0))))
      (local.set $s (call $stream1 (local.get $fd) (local.get $write)))
      (call $dropd (local.get $fd))
      (if (i32.eq (local.get $s) (i32.const -1)) (then (call $reset) (return (i32.const 0))))
      (call $ok (local.get $s)))
    (func (export "open-read") (param i32 i32) (result i32) (call $open (local.get 0) (local.get 1) (i32.const 0)))
    (func (export "open-write") (param i32 i32) (result i32) (call $open (local.get 0) (local.get 1) (i32.const 1)))
    ;; open-desc(name): a descriptor of the spool file name for reading,
    ;; kept in this instance; its handle is the u32 result.
    (func (export "open-desc") (param $p i32) (param $n i32) (result i32)
      (local $fd i32)
      (local.set $fd (call $openat1 (local.get $p) (local.get $n) (i32.const 0)))
      (if (i32.eq (local.get $fd) (i32.const -1)) (then (call $reset) (return (i32.const 0))))
      (call $ok (local.get $fd)))
    ;; stream-desc(fd, prime): a new input-stream at offset 0 of a kept
    ;; descriptor (no open-at: no thread handoff), its first read started
    ;; when prime is set.
    (func (export "stream-desc") (param $fd i32) (param $pr i32) (result i32)
      (local $s i32)
      (local.set $s (call $stream1 (local.get $fd) (i32.const 0)))
      (if (i32.eq (local.get $s) (i32.const -1)) (then (call $reset) (return (i32.const 0))))
      (if (local.get $pr) (then (call $prime (local.get $s))))
      (call $ok (local.get $s)))
    (func (export "close-desc") (param $fd i32) (call $dropd (local.get $fd)))
    (func (export "reset") (call $reset)))
  (core instance $mi (instantiate $main
    (with "m" (instance $m))
    (with "h" (instance
      (export "getdirs" (func $getdirs)) (export "openat" (func $openat))
      (export "rvs" (func $rvs)) (export "wvs" (func $wvs)) (export "dropd" (func $dropd))
      (export "read" (func $read)) (export "droperr" (func $droperr))))))
  (func (export "open-desc") (param "name" string) (result (result u32 (error u32)))
    (canon lift (core func $mi "open-desc") (memory $memory) (realloc $realloc)))
  (func (export "stream-desc") (param "desc" u32) (param "prime" bool) (result (result (own $in) (error u32)))
    (canon lift (core func $mi "stream-desc") (memory $memory)))
  (func (export "close-desc") (param "desc" u32)
    (canon lift (core func $mi "close-desc")))
  (func (export "open-read") (param "name" string) (result (result (own $in) (error u32)))
    (canon lift (core func $mi "open-read") (memory $memory) (realloc $realloc)))
  (func (export "open-write") (param "name" string) (result (result (own $out) (error u32)))
    (canon lift (core func $mi "open-write") (memory $memory) (realloc $realloc))))`

type spoolHelper struct {
	inst       C.wasmtime_component_instance_t
	read       C.wasmtime_component_func_t
	write      C.wasmtime_component_func_t
	openDesc   C.wasmtime_component_func_t
	streamDesc C.wasmtime_component_func_t
	closeDesc  C.wasmtime_component_func_t
}

func (e *Engine) spoolHelperComponent() (*Component, error) {
	e.spoolOnce.Do(func() {
		// Through the compile cache, like the clock helper: a run that uses
		// wasi:http loads it instead of compiling it with Cranelift.
		c, err := e.compile([]byte(spoolHelperWAT), CompileOptions{}, false)
		if err != nil {
			e.spoolErr = fmt.Errorf("wasmhost: compiling the wasi:http stream helper: %w", err)
			return
		}
		e.spool = c
	})
	return e.spool, e.spoolErr
}

// openStream opens name in the run's spool directory as a wasip2 stream for
// the guest: an input-stream (write false) or an output-stream.
func (r *run) openStream(name string, write bool) (*Resource, error) {
	if err := r.spoolHelper(); err != nil {
		return nil, err
	}
	fn := &r.spool.read
	if write {
		fn = &r.spool.write
	}
	var arg, res [1]cval
	lower(name, tString, &arg[0])
	cerr := C.wasmtime_component_func_call(fn, r.cctx, &arg[0], 1, &res[0], 1)
	deleteVals(arg[:])
	if cerr != nil {
		return nil, goErr("wasmhost: wasi:http stream helper", cerr)
	}
	out := lift(&res[0], r)
	deleteVals(res[:])
	if cerr := C.wasmtime_component_func_post_return(fn, r.cctx); cerr != nil {
		return nil, goErr("wasmhost: wasi:http stream helper post-return", cerr)
	}
	rv, ok := out.(Result)
	if !ok {
		return nil, fmt.Errorf("wasmhost: stream helper returned %T", out)
	}
	if rv.IsErr {
		return nil, fmt.Errorf("wasmhost: stream helper could not open %s: code %v", name, rv.Value)
	}
	s, ok := rv.Value.(*Resource)
	if !ok {
		return nil, fmt.Errorf("wasmhost: stream helper returned %T", rv.Value)
	}
	return s, nil
}

// openDesc opens the spool file name in the helper for reading and keeps
// the descriptor there; the handle is for streamDesc and closeDesc.
func (r *run) openDesc(name string) (uint32, error) {
	if err := r.spoolHelper(); err != nil {
		return 0, err
	}
	out, err := r.callHelper(&r.spool.openDesc, name, tString)
	if err != nil {
		return 0, err
	}
	rv, _ := out.(Result)
	d, ok := rv.Value.(uint32)
	if rv.IsErr || !ok {
		return 0, fmt.Errorf("wasmhost: stream helper could not open %s: code %v", name, rv.Value)
	}
	return d, nil
}

// streamDesc makes a new input-stream over a descriptor openDesc kept (no
// open-at, so no thread handoff inside wasmtime). With prime, the stream's
// first read is started on wasmtime's blocking pool at once, so that the
// guest's first blocking-read, a few host calls later, finds its bytes read
// instead of waiting for a blocking-pool thread (a handoff that cost 40-90
// µs of a 1 KiB GET); only for a file that is complete, as a file stream's
// read at the end of the file closes the stream for good.
func (r *run) streamDesc(desc uint32, prime bool) (*Resource, error) {
	if err := r.spoolHelper(); err != nil {
		return nil, err
	}
	out, err := r.callHelper(&r.spool.streamDesc, Tuple{desc, prime}, nil)
	if err != nil {
		return nil, err
	}
	rv, _ := out.(Result)
	s, ok := rv.Value.(*Resource)
	if rv.IsErr || !ok {
		return nil, fmt.Errorf("wasmhost: stream helper could not make a stream: code %v", rv.Value)
	}
	return s, nil
}

// closeDesc drops a descriptor openDesc kept.
func (r *run) closeDesc(desc uint32) error {
	if err := r.spoolHelper(); err != nil {
		return err
	}
	_, err := r.callHelper(&r.spool.closeDesc, Tuple{desc}, nil)
	return err
}

// callHelper calls one of the stream helper's functions with one argument
// of type t, or with the arguments of a Tuple (u32 and bool only), and
// returns its result (nil for none).
func (r *run) callHelper(fn *C.wasmtime_component_func_t, arg Value, t *Type) (Value, error) {
	args, ok := arg.(Tuple)
	if !ok {
		args = Tuple{arg}
	}
	in := make([]cval, len(args))
	for i, a := range args {
		at := t
		switch a.(type) {
		case uint32:
			at = hU32
		case bool:
			at = hBool
		}
		lower(a, at, &in[i])
	}
	var res [1]cval
	nres := C.size_t(1)
	if fn == &r.spool.closeDesc {
		nres = 0
	}
	cerr := C.wasmtime_component_func_call(fn, r.cctx, &in[0], C.size_t(len(in)), &res[0], nres)
	deleteVals(in)
	if cerr != nil {
		return nil, goErr("wasmhost: wasi:http stream helper", cerr)
	}
	var out Value
	if nres == 1 {
		out = lift(&res[0], r)
		deleteVals(res[:])
	}
	if cerr := C.wasmtime_component_func_post_return(fn, r.cctx); cerr != nil {
		return nil, goErr("wasmhost: wasi:http stream helper post-return", cerr)
	}
	return out, nil
}

// dropStream drops a stream the host opened and never handed to the guest
// (its wasip2 table entry and file descriptor would otherwise live as long
// as the store).
func (r *run) dropStream(s *Resource) {
	if s.closed() || r.cctx == nil {
		return
	}
	if err := C.wasmtime_component_resource_any_drop(r.cctx, s.p); err != nil {
		errorText(err)
	}
}

// spoolHelper instantiates the stream helper in the run's store on first use.
func (r *run) spoolHelper() error {
	if r.spool == nil {
		h, err := r.eng.spoolHelperComponent()
		if err != nil {
			return err
		}
		sh := &spoolHelper{}
		if cerr := C.wh_instantiate(r.eng.plainWasiLinker(), r.cctx, h.c, &sh.inst, r.c); cerr != nil {
			return goErr("wasmhost: instantiating the wasi:http stream helper", cerr)
		}
		for _, f := range []struct {
			name string
			out  *C.wasmtime_component_func_t
		}{
			{"open-read", &sh.read}, {"open-write", &sh.write},
			{"open-desc", &sh.openDesc}, {"stream-desc", &sh.streamDesc}, {"close-desc", &sh.closeDesc},
		} {
			ef, err := h.exportFunc("", f.name)
			if err != nil {
				return err
			}
			if !C.wasmtime_component_instance_get_func(&sh.inst, r.cctx, ef.idx, f.out) {
				return errNoHelper
			}
		}
		r.spool = sh
	}
	return nil
}

var (
	hU32  = &Type{Kind: KindU32}
	hBool = &Type{Kind: KindBool}
)
