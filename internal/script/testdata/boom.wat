;; boom.wat: run writes what a Go guest's panic("boom") prints to stderr,
;; then traps as such a guest does.
(component
  (import "wasi:io/error@0.2.6" (instance $ioerr (export "error" (type (sub resource)))))
  (alias export $ioerr "error" (type $error))
  (import "wasi:io/streams@0.2.6" (instance $streams
    (export "error" (type $e (eq $error)))
    (export "output-stream" (type $os (sub resource)))
    (type $se (variant (case "last-operation-failed" (own $e)) (case "closed")))
    (export "stream-error" (type $stream-error (eq $se)))
    (export "[method]output-stream.blocking-write-and-flush"
      (func (param "self" (borrow $os)) (param "contents" (list u8)) (result (result (error $stream-error)))))))
  (alias export $streams "output-stream" (type $output-stream))
  (import "wasi:cli/stderr@0.2.6" (instance $stderr
    (export "output-stream" (type $o (eq $output-stream)))
    (export "get-stderr" (func (result (own $o))))))
  (core module $Mem
    (memory (export "memory") 1)
    (data (i32.const 64) "starting\0apanic: boom\0a\0agoroutine 1 [running]:\0amain.main()\0a\09/src/main.go:4 +0x2\0a")
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (unreachable)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "cabi_realloc" (core func $realloc))
  (core func $getstderr (canon lower (func $stderr "get-stderr")))
  (core func $write (canon lower (func $streams "[method]output-stream.blocking-write-and-flush") (memory $memory) (realloc $realloc)))
  (core module $Main
    (import "env" "memory" (memory 1))
    (import "host" "getstderr" (func $getstderr (result i32)))
    (import "host" "write" (func $write (param i32 i32 i32 i32)))
    (func (export "run")
      (call $write (call $getstderr) (i32.const 64) (i32.const 78) (i32.const 0))
      (unreachable)))
  (core instance $main (instantiate $Main
    (with "env" (instance (export "memory" (memory $memory))))
    (with "host" (instance (export "getstderr" (func $getstderr)) (export "write" (func $write))))))
  (func $run (canon lift (core func $main "run")))
  (instance $capsule (export "run" (func $run)))
  (export "murmur:capsule/run@0.1.0" (instance $capsule)))
