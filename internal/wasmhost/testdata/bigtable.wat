;; bigtable.wat: a table whose minimum (200,000) is over the default limit.
(component
  (core module $M (table 200000 funcref) (func (export "run")))
  (core instance $m (instantiate $M))
  (func (export "run") (canon lift (core func $m "run"))))
