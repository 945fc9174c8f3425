;; capsule_echo.wat (a copy of internal/wasmhost/testdata/capsule.wat): a script capsule with the import shapes components from other
;; toolchains have: a types-only murmur:tool/run@0.1.0 instance import beside
;; murmur:tool-registry/invoke@0.1.0, and WASI imports at @0.2.9 and @0.2.12.
;; murmur:capsule/run@0.1.0#run invokes tool "echo" with data "hi" and traps
;; unless the answer is ok({status: passed, data: some("hi"), ...}); an
;; err(...) answer makes it trap with `unreachable` too, after calling
;; wasi:random (0.2.12) and wasi:cli/environment (0.2.9).
(component $C
  (import "wasi:random/random@0.2.12" (instance $random
    (export "get-random-u64" (func (result u64)))))
  (import "wasi:cli/environment@0.2.9" (instance $env
    (export "get-arguments" (func (result (list string))))))
  (import "murmur:tool/run@0.1.0" (instance $toolrun
    (type $st (enum "passed" "failed" "error"))
    (export "status" (type $status (eq $st)))
    (type $in (record (field "data" (option string)) (field "log-path" (option string))))
    (export "tool-input" (type $tool-input (eq $in)))
    (type $res (record
      (field "status" $status)
      (field "summary" (option string))
      (field "data" (option string))
      (field "data-path" (option string))
      (field "truncated" bool)
      (field "metadata" (list (tuple string string)))))
    (export "tool-result" (type $tool-result (eq $res)))))
  (alias export $toolrun "status" (type $status))
  (alias export $toolrun "tool-input" (type $tool-input))
  (alias export $toolrun "tool-result" (type $tool-result))
  (import "murmur:tool-registry/invoke@0.1.0" (instance $registry
    (export "tool-input" (type $ti (eq $tool-input)))
    (export "tool-result" (type $tr (eq $tool-result)))
    (export "status" (type $ts (eq $status)))
    (export "invoke" (func (param "name" string) (param "input" $ti) (result (result $tr (error string)))))))

  (core module $Mem
    (memory (export "memory") 1)
    (global $bump (mut i32) (i32.const 8192))
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
      (global.set $bump (i32.add (local.get $p) (local.get 3)))
      (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
        (then (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable))))
      (local.get $p)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))

  (core func $invoke (canon lower (func $registry "invoke") (memory $memory) (realloc $realloc) string-encoding=utf8))
  (core func $rand (canon lower (func $random "get-random-u64")))
  (core func $args (canon lower (func $env "get-arguments") (memory $memory) (realloc $realloc) string-encoding=utf8))

  (core module $Main
    (import "env" "memory" (memory 1))
    (import "host" "invoke" (func $invoke (param i32 i32 i32 i32 i32 i32 i32 i32 i32)))
    (import "host" "rand" (func $rand (result i64)))
    (import "host" "args" (func $args (param i32)))
    (data (i32.const 100) "echohi")
    (func (export "run")
      (drop (call $rand))
      (call $args (i32.const 300))
      ;; invoke("echo", {data: some("hi"), log-path: none}) -> result at 2000
      (call $invoke (i32.const 100) (i32.const 4)
                    (i32.const 1) (i32.const 104) (i32.const 2)
                    (i32.const 0) (i32.const 0) (i32.const 0)
                    (i32.const 2000))
      ;; ok?
      (if (i32.ne (i32.load8_u (i32.const 2000)) (i32.const 0)) (then unreachable))
      ;; status passed?
      (if (i32.ne (i32.load8_u (i32.const 2004)) (i32.const 0)) (then unreachable))
      ;; data is some("hi")?
      (if (i32.ne (i32.load8_u (i32.const 2020)) (i32.const 1)) (then unreachable))
      (if (i32.ne (i32.load (i32.const 2028)) (i32.const 2)) (then unreachable))
      (if (i32.ne (i32.load16_u (i32.load (i32.const 2024))) (i32.const 0x6968)) (then unreachable))))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory))))
    (with "host" (instance
      (export "invoke" (func $invoke))
      (export "rand" (func $rand))
      (export "args" (func $args))))))
  (func $run (canon lift (core func $main "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
