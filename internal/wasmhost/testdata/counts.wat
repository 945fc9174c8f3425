;; counts.wat: three core instances each with a memory and a table, to test
;; the memory-count and table-count caps.
(component
  (core module $M (memory 1) (table 1 funcref) (func (export "f")))
  (core instance $a (instantiate $M))
  (core instance $b (instantiate $M))
  (core instance $c (instantiate $M))
  (func (export "run") (canon lift (core func $c "f"))))
