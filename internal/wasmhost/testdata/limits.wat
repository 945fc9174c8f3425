;; limits.wat: guests that push against the run's limits.
;;   balloon:       grows memory 1 MiB at a time until refused, then traps
;;   balloon-spin:  grows until refused, then spins (must still be stopped)
;;   table-balloon: grows its table 1,000 elements at a time until refused, then traps
;;   grow(n) -> s32: grows memory by n pages once, returns memory.grow's answer
(component
  (core module $M
    (memory 1)
    (table $t 1 funcref)
    (func (export "balloon")
      (loop $l
        (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1)) (then unreachable))
        (br $l)))
    (func (export "balloon-spin")
      (block $refused
        (loop $l
          (br_if $refused (i32.eq (memory.grow (i32.const 16)) (i32.const -1)))
          (br $l)))
      (loop $spin (br $spin)))
    (func (export "table-balloon")
      (loop $l
        (if (i32.eq (table.grow $t (ref.null func) (i32.const 1000)) (i32.const -1)) (then unreachable))
        (br $l)))
    (func (export "grow") (param i32) (result i32)
      (memory.grow (local.get 0))))
  (core instance $m (instantiate $M))
  (func (export "balloon") (canon lift (core func $m "balloon")))
  (func (export "balloon-spin") (canon lift (core func $m "balloon-spin")))
  (func (export "table-balloon") (canon lift (core func $m "table-balloon")))
  (func (export "grow") (param "pages" u32) (result s32) (canon lift (core func $m "grow"))))
