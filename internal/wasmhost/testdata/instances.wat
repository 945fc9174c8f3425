;; instances.wat: eight core instances (over a limit of four).
(component
  (core module $M (func (export "f")))
  (core instance $a (instantiate $M))
  (core instance $b (instantiate $M))
  (core instance $c (instantiate $M))
  (core instance $d (instantiate $M))
  (core instance $e (instantiate $M))
  (core instance $f (instantiate $M))
  (core instance $g (instantiate $M))
  (core instance $h (instantiate $M))
  (func (export "run") (canon lift (core func $h "f"))))
