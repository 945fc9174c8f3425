;; values.wat: host functions returning the value kinds wasmtime's C API
;; cannot take malformed (strings, chars, strings nested in lists and
;; options), so tests can hand it bad values from Go. Imports
;; murmur:test/values@0.1.0; each export calls the import of the same name
;; and returns what it got (char, string length, list length).
(component
  (import "murmur:test/values@0.1.0" (instance $host
    (export "get-char" (func (result char)))
    (export "get-string" (func (result string)))
    (export "get-list" (func (result (list (option string)))))))
  (core module $Mem
    (memory (export "mem") 1)
    (global $top (mut i32) (i32.const 1024))
    ;; A bump allocator: enough for the few values a test returns.
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and (i32.add (global.get $top) (i32.const 7)) (i32.const -8)))
      (global.set $top (i32.add (local.get $p) (local.get 3)))
      (if (i32.gt_u (global.get $top) (i32.const 65536)) (then unreachable))
      (local.get $p)))
  (core instance $mem (instantiate $Mem))
  (core func $get-char (canon lower (func $host "get-char")))
  (core func $get-string (canon lower (func $host "get-string")
    (memory $mem "mem") (realloc (func $mem "realloc")) string-encoding=utf8))
  (core func $get-list (canon lower (func $host "get-list")
    (memory $mem "mem") (realloc (func $mem "realloc")) string-encoding=utf8))
  (core module $M
    (import "host" "get-char" (func $get-char (result i32)))
    (import "host" "get-string" (func $get-string (param i32)))
    (import "host" "get-list" (func $get-list (param i32)))
    (import "mem" "mem" (memory 1))
    (func (export "char") (result i32) (call $get-char))
    (func (export "string") (result i32)
      (call $get-string (i32.const 16))
      (i32.load (i32.const 20)))
    (func (export "list") (result i32)
      (call $get-list (i32.const 16))
      (i32.load (i32.const 20))))
  (core instance $m (instantiate $M
    (with "host" (instance
      (export "get-char" (func $get-char))
      (export "get-string" (func $get-string))
      (export "get-list" (func $get-list))))
    (with "mem" (instance $mem))))
  (func (export "char") (result char) (canon lift (core func $m "char")))
  (func (export "string") (result u32) (canon lift (core func $m "string")))
  (func (export "list") (result u32) (canon lift (core func $m "list"))))
