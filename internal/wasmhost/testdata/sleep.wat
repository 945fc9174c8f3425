;; sleep.wat: sleep(ns) blocks on a wasi:clocks/monotonic-clock subscription
;; (wasi:io/poll pollable.block), then returns; murmur:capsule/run sleeps 10 s.
(component
  (import "wasi:io/poll@0.2.6" (instance $poll
    (export "pollable" (type $p (sub resource)))
    (export "[method]pollable.block" (func (param "self" (borrow $p))))))
  (alias export $poll "pollable" (type $pollable))
  (import "wasi:clocks/monotonic-clock@0.2.6" (instance $clock
    (export "pollable" (type $pl (eq $pollable)))
    (export "subscribe-duration" (func (param "when" u64) (result (own $pl))))))
  (core func $subscribe (canon lower (func $clock "subscribe-duration")))
  (core func $block (canon lower (func $poll "[method]pollable.block")))
  (core func $drop (canon resource.drop $pollable))
  (core module $M
    (import "host" "subscribe" (func $subscribe (param i64) (result i32)))
    (import "host" "block" (func $block (param i32)))
    (import "host" "drop" (func $drop (param i32)))
    (func $sleep (export "sleep") (param $ns i64)
      (local $h i32)
      (local.set $h (call $subscribe (local.get $ns)))
      (call $block (local.get $h))
      (call $drop (local.get $h)))
    (func (export "run") (call $sleep (i64.const 10000000000))))
  (core instance $m (instantiate $M (with "host" (instance
    (export "subscribe" (func $subscribe))
    (export "block" (func $block))
    (export "drop" (func $drop))))))
  (func (export "sleep") (param "ns" u64) (canon lift (core func $m "sleep")))
  (func $run (canon lift (core func $m "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
