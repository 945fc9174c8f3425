;; sleep_tool.wat: a murmur:tool/run@0.1.0 tool whose run blocks 10 s on a
;; wasi:clocks/monotonic-clock subscription (waiting on the runtime), so a
;; short deadline stops it while waiting: the invoke answers err and the
;; trace gets a call_deadline line naming the tool.
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
  (type $status (enum "passed" "failed" "error"))
  (type $input (record (field "data" (option string)) (field "log-path" (option string))))
  (type $result (record
    (field "status" $status)
    (field "summary" (option string))
    (field "data" (option string))
    (field "data-path" (option string))
    (field "truncated" bool)
    (field "metadata" (list (tuple string string)))))
  (core module $M
    (import "host" "subscribe" (func $subscribe (param i64) (result i32)))
    (import "host" "block" (func $block (param i32)))
    (import "host" "drop" (func $drop (param i32)))
    (memory (export "memory") 1)
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (i32.const 4096))
    (func (export "run") (param i32 i32 i32 i32 i32 i32) (result i32)
      (local $h i32)
      (local.set $h (call $subscribe (i64.const 10000000000)))
      (call $block (local.get $h))
      (call $drop (local.get $h))
      ;; all-zero result at 1024: passed, no summary, no data, empty metadata
      (i32.const 1024)))
  (core instance $m (instantiate $M (with "host" (instance
    (export "subscribe" (func $subscribe))
    (export "block" (func $block))
    (export "drop" (func $drop))))))
  (alias core export $m "memory" (core memory $mem))
  (alias core export $m "cabi_realloc" (core func $realloc))
  (func $run (param "input" $input) (result $result)
    (canon lift (core func $m "run") (memory $mem) (realloc $realloc) string-encoding=utf8))
  (instance $tool
    (export "status" (type $status))
    (export "tool-input" (type $input))
    (export "tool-result" (type $result))
    (export "run" (func $run)))
  (export "murmur:tool/run@0.1.0" (instance $tool)))
