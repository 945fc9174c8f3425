;; echo_tool.wat: murmur:tool/run@0.1.0 echo tool.
;; run(input) -> {status: passed, summary: some("ok"), data: input.data,
;;                data-path: none, truncated: false, metadata: [("echo", "1")]}
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
    (global $bump (mut i32) (i32.const 4096))
    (data (i32.const 512) "okecho1")
    ;; metadata list: one tuple (ptr,len,ptr,len) at 600
    (data (i32.const 600) "\02\02\00\00\04\00\00\00\06\02\00\00\01\00\00\00")
    (func (export "cabi_realloc") (param $old i32) (param $oldsz i32) (param $align i32) (param $size i32) (result i32)
      (local $p i32)
      ;; align up
      (local.set $p (i32.and
        (i32.add (global.get $bump) (i32.sub (local.get $align) (i32.const 1)))
        (i32.xor (i32.sub (local.get $align) (i32.const 1)) (i32.const -1))))
      (global.set $bump (i32.add (local.get $p) (local.get $size)))
      (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
        (then (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable))))
      (local.get $p))
    (func (export "run") (param $dtag i32) (param $dptr i32) (param $dlen i32)
                         (param $ltag i32) (param $lptr i32) (param $llen i32) (result i32)
      (i32.store8 (i32.const 1024) (i32.const 0))            ;; status passed
      (i32.store8 (i32.const 1028) (i32.const 1))            ;; summary some
      (i32.store (i32.const 1032) (i32.const 512))
      (i32.store (i32.const 1036) (i32.const 2))
      (i32.store8 (i32.const 1040) (local.get $dtag))        ;; data = input.data
      (i32.store (i32.const 1044) (local.get $dptr))
      (i32.store (i32.const 1048) (local.get $dlen))
      (i32.store8 (i32.const 1052) (i32.const 0))            ;; data-path none
      (i32.store8 (i32.const 1064) (i32.const 0))            ;; truncated false
      (i32.store (i32.const 1068) (i32.const 600))           ;; metadata ptr
      (i32.store (i32.const 1072) (i32.const 1))             ;; metadata len
      (i32.const 1024))
    (func (export "post") (param i32)
      (global.set $bump (i32.const 4096))))
  (core instance $i (instantiate $m))
  (alias core export $i "memory" (core memory $mem))
  (alias core export $i "cabi_realloc" (core func $realloc))
  (func $run (param "input" $input) (result $result)
    (canon lift (core func $i "run") (memory $mem) (realloc $realloc) string-encoding=utf8
      (post-return (func $i "post"))))
  (instance $tool
    (export "status" (type $status))
    (export "tool-input" (type $input))
    (export "tool-result" (type $result))
    (export "run" (func $run)))
  (export "murmur:tool/run@0.1.0" (instance $tool)))
