;; twomem.wat: two core instances with a memory each, to test that the
;; memory limit bounds their total. grow-a(n) / grow-b(n) -> s32 grow one
;; memory by n pages and return memory.grow's answer.
(component
  (core module $M
    (memory 1)
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))
  (core instance $a (instantiate $M))
  (core instance $b (instantiate $M))
  (func (export "grow-a") (param "pages" u32) (result s32) (canon lift (core func $a "grow")))
  (func (export "grow-b") (param "pages" u32) (result s32) (canon lift (core func $b "grow"))))
