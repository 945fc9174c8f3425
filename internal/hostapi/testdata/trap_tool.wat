;; trap_tool.wat: a murmur:tool/run@0.1.0 tool whose run traps (unreachable)
;; before returning anything: the host must answer the capsule's invoke with
;; err(trap message) and let the capsule go on.
(component
  (type $status (enum "passed" "failed" "error"))
  (type $input (record (field "data" (option string)) (field "log-path" (option string))))
  (type $result (record
    (field "status" $status)
    (field "summary" (option string))
    (field "data" (option string))
    (field "data-path" (option string))
    (field "truncated" bool)
    (field "metadata" (list (tuple string string)))))
  (core module $m
    (memory (export "memory") 1)
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (i32.const 4096))
    (func (export "run") (param i32 i32 i32 i32 i32 i32) (result i32)
      unreachable))
  (core instance $i (instantiate $m))
  (alias core export $i "memory" (core memory $mem))
  (alias core export $i "cabi_realloc" (core func $realloc))
  (func $run (param "input" $input) (result $result)
    (canon lift (core func $i "run") (memory $mem) (realloc $realloc) string-encoding=utf8))
  (instance $tool
    (export "status" (type $status))
    (export "tool-input" (type $input))
    (export "tool-result" (type $result))
    (export "run" (func $run)))
  (export "murmur:tool/run@0.1.0" (instance $tool)))
