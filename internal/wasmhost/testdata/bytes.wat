;; bytes.wat: a host function handing the guest list<u8> results, the shape
;; a Go-owned wasi:io input-stream.read would have. Imports
;; murmur:bench/bytes@0.1.0 get(n: u32) -> list<u8>; exports loop(times, n)
;; -> u32, which calls get(n) times times and returns the bytes received.
(component
  (import "murmur:bench/bytes@0.1.0" (instance $host
    (export "get" (func (param "n" u32) (result (list u8))))))
  (core module $Mem
    (memory (export "memory") 1)
    ;; every result lands at 64: the guest only counts the bytes.
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $need i32)
      (local.set $need (i32.add (i32.const 64) (local.get 3)))
      (if (i32.gt_u (local.get $need) (i32.mul (memory.size) (i32.const 65536)))
        (then (drop (memory.grow (i32.add (i32.shr_u (local.get $need) (i32.const 16)) (i32.const 1))))))
      (i32.const 64)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "realloc" (core func $realloc))
  (core func $get (canon lower (func $host "get") (memory $memory) (realloc $realloc)))
  (core module $M
    (import "host" "get" (func $get (param i32 i32)))
    (import "host" "memory" (memory 1))
    (func (export "loop") (param $times i32) (param $n i32) (result i32)
      (local $total i32)
      (block $done
        (loop $l
          (br_if $done (i32.eqz (local.get $times)))
          (call $get (local.get $n) (i32.const 0))
          (local.set $total (i32.add (local.get $total) (i32.load (i32.const 4))))
          (local.set $times (i32.sub (local.get $times) (i32.const 1)))
          (br $l)))
      (local.get $total)))
  (core instance $m (instantiate $M (with "host" (instance (export "get" (func $get)) (export "memory" (memory $memory))))))
  (func (export "loop") (param "times" u32) (param "n" u32) (result u32) (canon lift (core func $m "loop"))))
