;; filestream.wat: probes what wasmtime 39 does with a wasip2 file
;; input-stream at end of file. The host hands the guest a stream over a
;; spool file (murmur:probe/spool.open); read(n) does one blocking-read and
;; returns the bytes read, or -1 for closed, -2 for last-operation-failed;
;; drain(times, n) does times such reads in one call and returns the total.
;; It imports wasi:http/types only so that the run gets a spool.
(component
  (import "wasi:io/error@0.2.6" (instance $err (export "error" (type (sub resource)))))
  (alias export $err "error" (type $error))
  (import "wasi:io/streams@0.2.6" (instance $io
    (export "error" (type $e (eq $error)))
    (export "input-stream" (type $in (sub resource)))
    (type $se' (variant (case "last-operation-failed" (own $e)) (case "closed")))
    (export "stream-error" (type $se (eq $se')))
    (export "[method]input-stream.blocking-read" (func (param "self" (borrow $in)) (param "len" u64)
      (result (result (list u8) (error $se)))))))
  (alias export $io "input-stream" (type $input-stream))
  (import "murmur:probe/spool@0.1.0" (instance $probe
    (export "input-stream" (type $pin (eq $input-stream)))
    (export "open" (func (result (own $pin))))))
  (import "wasi:http/types@0.2.9" (instance $types
    (export "fields" (type $fields (sub resource)))
    (export "[constructor]fields" (func (result (own $fields))))))

  (core module $Mem
    (memory (export "memory") 1)
    ;; every result lands at 1024: the guest reads one list at a time.
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (local $need i32)
      (local.set $need (i32.add (i32.const 1024) (local.get 3)))
      (if (i32.gt_u (local.get $need) (i32.mul (memory.size) (i32.const 65536)))
        (then (drop (memory.grow (i32.add (i32.shr_u (local.get $need) (i32.const 16)) (i32.const 1))))))
      (i32.const 1024)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))
  (core func $open (canon lower (func $probe "open")))
  (core func $bread (canon lower (func $io "[method]input-stream.blocking-read") (memory $memory) (realloc $realloc)))
  (core func $drop (canon resource.drop $input-stream))
  (core module $Main
    (import "h" "open" (func $open (result i32)))
    (import "h" "bread" (func $bread (param i32 i64 i32)))
    (import "h" "drop" (func $drop (param i32)))
    (import "h" "memory" (memory 1))
    (global $s (mut i32) (i32.const 0))
    (func (export "open")
      (if (global.get $s) (then (call $drop (global.get $s))))
      (global.set $s (call $open)))
    (func (export "read") (param $n i64) (result i32)
      (call $bread (global.get $s) (local.get $n) (i32.const 0))
      (if (i32.eqz (i32.load8_u (i32.const 0))) (then (return (i32.load (i32.const 8)))))
      (if (i32.eq (i32.load8_u (i32.const 4)) (i32.const 1)) (then (return (i32.const -1))))
      (i32.const -2))
    ;; drain(times, n): times blocking-reads of up to n bytes; the bytes read.
    (func (export "drain") (param $times i32) (param $n i64) (result i32)
      (local $total i32)
      (block $done
        (loop $l
          (br_if $done (i32.eqz (local.get $times)))
          (call $bread (global.get $s) (local.get $n) (i32.const 0))
          (br_if $done (i32.load8_u (i32.const 0)))
          (local.set $total (i32.add (local.get $total) (i32.load (i32.const 8))))
          (local.set $times (i32.sub (local.get $times) (i32.const 1)))
          (br $l)))
      (local.get $total)))
  (core instance $main (instantiate $Main (with "h" (instance
    (export "open" (func $open)) (export "bread" (func $bread)) (export "drop" (func $drop))
    (export "memory" (memory $memory))))))
  (func (export "open") (canon lift (core func $main "open")))
  (func (export "read") (param "n" u64) (result s32) (canon lift (core func $main "read")))
  (func (export "drain") (param "times" u32) (param "n" u64) (result u32) (canon lift (core func $main "drain"))))
