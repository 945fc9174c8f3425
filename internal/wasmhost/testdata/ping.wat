;; ping.wat: guest -> host round trips. Imports murmur:bench/ping@0.1.0
;; ping(u32) -> u32 and exports loop(n) -> u32, which calls ping n times,
;; feeding each answer into the next call, and returns the last answer.
(component
  (import "murmur:bench/ping@0.1.0" (instance $host
    (export "ping" (func (param "x" u32) (result u32)))))
  (core func $ping (canon lower (func $host "ping")))
  (core module $M
    (import "host" "ping" (func $ping (param i32) (result i32)))
    (func (export "loop") (param $n i32) (result i32)
      (local $acc i32)
      (block $done
        (loop $l
          (br_if $done (i32.eqz (local.get $n)))
          (local.set $acc (call $ping (local.get $acc)))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $l)))
      (local.get $acc)))
  (core instance $m (instantiate $M (with "host" (instance (export "ping" (func $ping))))))
  (func $loop (param "n" u32) (result u32) (canon lift (core func $m "loop")))
  (export "loop" (func $loop)))
