package plan

import (
	"fmt"
	"unicode/utf8"
)

// The condition language of a step's "if" (docs/plans.md): comparisons of
// references and quoted literals with == != < >, joined by && and ||, &&
// binding tighter. No parentheses, negation, numbers or escapes. The parser
// is a small recursive descent over the bytes, with each error placed at a
// 1-based character position.

// Ref is one $<step>.<field> reference.
type Ref struct {
	Step, Field string
	// Pos is the 1-based character position of its "$" (conditions only).
	Pos int
}

// operand is a reference or a literal.
type operand struct {
	ref     *Ref
	literal string
}

type comparison struct {
	left, right operand
	op          string
}

// Cond is a parsed condition: a disjunction of conjunctions. A nil or
// empty Cond is true.
type Cond struct {
	or [][]comparison
}

// Refs lists the condition's references in the order written.
func (c *Cond) Refs() []Ref {
	if c == nil {
		return nil
	}
	var out []Ref
	for _, and := range c.or {
		for _, cmp := range and {
			for _, o := range []operand{cmp.left, cmp.right} {
				if o.ref != nil {
					out = append(out, *o.ref)
				}
			}
		}
	}
	return out
}

// CondError is a condition that cannot be read.
type CondError struct {
	// Col is the 1-based character position.
	Col      int
	Expected string
}

func (e *CondError) Error() string {
	return fmt.Sprintf("the condition cannot be read at character %d: %s", e.Col, e.Expected)
}

// What a condition error says was expected.
const (
	expOperand  = "expected $<step>.output, $<step>.status or a quoted literal"
	expOperator = "expected ==, !=, < or >"
	expJoin     = "expected && or || or the end"
	expClosed   = "the quoted literal is not closed"
)

// ParseCond parses a condition. A blank one is true (a nil *Cond).
func ParseCond(s string) (*Cond, error) {
	p := &condParser{s: s}
	p.ws()
	if p.i == len(p.s) {
		return nil, nil
	}
	c := &Cond{}
	for {
		and, err := p.conjunction()
		if err != nil {
			return nil, err
		}
		c.or = append(c.or, and)
		p.ws()
		if p.i == len(p.s) {
			return c, nil
		}
		if !p.take("||") {
			return nil, p.fail(expJoin)
		}
		p.ws()
	}
}

type condParser struct {
	s string
	i int
}

// col is the 1-based character position of byte offset i.
func (p *condParser) col(i int) int { return utf8.RuneCountInString(p.s[:i]) + 1 }

func (p *condParser) fail(expected string) error {
	return &CondError{Col: p.col(p.i), Expected: expected}
}

func (p *condParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *condParser) take(tok string) bool {
	if len(p.s)-p.i >= len(tok) && p.s[p.i:p.i+len(tok)] == tok {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *condParser) conjunction() ([]comparison, error) {
	var and []comparison
	for {
		cmp, err := p.comparison()
		if err != nil {
			return nil, err
		}
		and = append(and, cmp)
		save := p.i
		p.ws()
		if !p.take("&&") {
			p.i = save
			return and, nil
		}
		p.ws()
	}
}

func (p *condParser) comparison() (comparison, error) {
	var c comparison
	var err error
	if c.left, err = p.operand(); err != nil {
		return c, err
	}
	p.ws()
	switch {
	case p.take("=="):
		c.op = "=="
	case p.take("!="):
		c.op = "!="
	case p.take("<"):
		c.op = "<"
	case p.take(">"):
		c.op = ">"
	default:
		return c, p.fail(expOperator)
	}
	p.ws()
	c.right, err = p.operand()
	return c, err
}

func (p *condParser) operand() (operand, error) {
	if p.i >= len(p.s) {
		return operand{}, p.fail(expOperand)
	}
	switch q := p.s[p.i]; q {
	case '"', '\'':
		end := indexByteFrom(p.s, p.i+1, q)
		if end < 0 {
			return operand{}, p.fail(expClosed)
		}
		lit := p.s[p.i+1 : end]
		p.i = end + 1
		return operand{literal: lit}, nil
	case '$':
		start := p.i
		j := p.i + 1
		for j < len(p.s) && idChar(p.s[j]) {
			j++
		}
		id := p.s[p.i+1 : j]
		if id == "" || len(id) > 64 || j >= len(p.s) || p.s[j] != '.' {
			return operand{}, p.fail(expOperand)
		}
		k := j + 1
		for k < len(p.s) && idChar(p.s[k]) {
			k++
		}
		field := p.s[j+1 : k]
		if field == "" {
			return operand{}, p.fail(expOperand)
		}
		p.i = k
		// A field other than output or status is read here and refused
		// by validation with its own sentence.
		return operand{ref: &Ref{Step: id, Field: field, Pos: p.col(start)}}, nil
	}
	return operand{}, p.fail(expOperand)
}

func indexByteFrom(s string, from int, b byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func idChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// Eval evaluates the condition; value gives a reference's value. && and ||
// go left to right and stop once the result is decided.
func (c *Cond) Eval(value func(Ref) string) bool {
	if c == nil || len(c.or) == 0 {
		return true
	}
	for _, and := range c.or {
		ok := true
		for _, cmp := range and {
			if !cmp.eval(value) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (c comparison) eval(value func(Ref) string) bool {
	l, r := c.left.value(value), c.right.value(value)
	switch c.op {
	case "==":
		return l == r
	case "!=":
		return l != r
	case "<":
		return l < r
	default:
		return l > r
	}
}

func (o operand) value(value func(Ref) string) string {
	if o.ref != nil {
		return value(*o.ref)
	}
	return o.literal
}
