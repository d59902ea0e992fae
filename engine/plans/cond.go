package plans

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Conditions (`when`, validation checks, decision branches) are a small
// expression language, written by hand rather than taken from a library
// such as expr-lang/expr because references must be operands with their
// JSON type: a command's stdout full of quotes or newlines must not be
// pasted into the expression text and re-parsed. The grammar:
//
//	or      = and { "||" and }
//	and     = cmp { "&&" cmp }
//	cmp     = unary [ ("==" | "!=" | "<" | "<=" | ">" | ">=" | "contains") unary ]
//	unary   = "!" unary | primary
//	primary = number | string | "true" | "false" | "null" | reference | "(" or ")"
//
// Strings are quoted with ' or " (backslash escapes) and may contain
// references, interpolated as text. A reference operand ("${test.exitCode}",
// "$read") takes the referenced value. Comparisons: numbers numerically (a
// string that holds a number compares as that number, so stdout "3\n" > 2);
// strings lexically; == and != on any values (deep equality, different types
// are unequal). "a contains b": substring for strings, element for arrays,
// key for objects. A lone operand is true unless it is false, null, 0, "",
// "false", an empty array or object.

// cond is a parsed condition.
type cond struct {
	src  string
	root cnode
}

type cnode interface{}

type (
	litNode struct{ v any }
	strNode struct{ t template }
	refNode struct{ r ref }
	notNode struct{ x cnode }
	andNode struct{ l, r cnode }
	orNode  struct{ l, r cnode }
	cmpNode struct {
		op   string
		l, r cnode
	}
)

type tokKind int

const (
	tkEOF tokKind = iota
	tkLParen
	tkRParen
	tkNot
	tkAnd
	tkOr
	tkCmp
	tkNumber
	tkString
	tkRef
	tkWord
)

type token struct {
	kind tokKind
	pos  int // byte offset, for messages
	text string
	num  float64
	str  template
	ref  ref
}

// condError is a syntax error in a condition.
type condError struct {
	expr string
	pos  int
	msg  string
}

func (e *condError) Error() string {
	return fmt.Sprintf("condition %q: at column %d: %s", e.expr, e.pos+1, e.msg)
}

func lexCond(src string) ([]token, error) {
	var toks []token
	errAt := func(pos int, format string, a ...any) error {
		return &condError{src, pos, fmt.Sprintf(format, a...)}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks = append(toks, token{kind: tkLParen, pos: i, text: "("})
			i++
		case c == ')':
			toks = append(toks, token{kind: tkRParen, pos: i, text: ")"})
			i++
		case strings.HasPrefix(src[i:], "&&"):
			toks = append(toks, token{kind: tkAnd, pos: i, text: "&&"})
			i += 2
		case strings.HasPrefix(src[i:], "||"):
			toks = append(toks, token{kind: tkOr, pos: i, text: "||"})
			i += 2
		case strings.HasPrefix(src[i:], "==") || strings.HasPrefix(src[i:], "!=") ||
			strings.HasPrefix(src[i:], "<=") || strings.HasPrefix(src[i:], ">="):
			toks = append(toks, token{kind: tkCmp, pos: i, text: src[i : i+2]})
			i += 2
		case c == '<' || c == '>':
			toks = append(toks, token{kind: tkCmp, pos: i, text: src[i : i+1]})
			i++
		case c == '!':
			toks = append(toks, token{kind: tkNot, pos: i, text: "!"})
			i++
		case c == '=':
			return nil, errAt(i, "single '=': write == to compare")
		case c == '&' || c == '|':
			return nil, errAt(i, "single %q: write %c%c", c, c, c)
		case c == '\'' || c == '"':
			j, s, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			t, err := parseTemplate(s)
			if err != nil {
				return nil, errAt(i, "%v", err)
			}
			toks = append(toks, token{kind: tkString, pos: i, text: src[i:j], str: t})
			i = j
		case c == '$':
			if i+1 < len(src) && src[i+1] == '{' {
				end := refEnd(src, i+2)
				if end < 0 {
					return nil, errAt(i, "unterminated reference: close it with }")
				}
				toks = append(toks, token{kind: tkRef, pos: i, text: src[i : end+1], ref: ref{body: strings.TrimSpace(src[i+2 : end])}})
				i = end + 1
				continue
			}
			j := i + 1
			for j < len(src) && isIDByte(src[j]) {
				j++
			}
			if j == i+1 {
				return nil, errAt(i, "lone '$': refer to outputs as ${step.field} or $step")
			}
			toks = append(toks, token{kind: tkRef, pos: i, text: src[i:j], ref: ref{body: src[i+1 : j], bare: true}})
			i = j
		case c == '-' || c == '.' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isIDByte(src[j]) || (src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			f, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, errAt(i, "bad number %q", src[i:j])
			}
			toks = append(toks, token{kind: tkNumber, pos: i, text: src[i:j], num: f})
			i = j
		case isIDByte(c):
			j := i + 1
			for j < len(src) && isIDByte(src[j]) {
				j++
			}
			w := src[i:j]
			if w == "contains" {
				toks = append(toks, token{kind: tkCmp, pos: i, text: w})
			} else {
				toks = append(toks, token{kind: tkWord, pos: i, text: w})
			}
			i = j
		default:
			return nil, errAt(i, "unexpected %q", string(rune(c)))
		}
	}
	toks = append(toks, token{kind: tkEOF, pos: len(src)})
	return toks, nil
}

func isIDByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// lexString reads a quoted string at src[i] and returns the index after it
// and its contents.
func lexString(src string, i int) (int, string, error) {
	q := src[i]
	var b strings.Builder
	for j := i + 1; j < len(src); j++ {
		c := src[j]
		switch {
		case c == q:
			return j + 1, b.String(), nil
		case c == '\\' && j+1 < len(src):
			j++
			switch e := src[j]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return 0, "", &condError{src, i, "unterminated string: close it with " + string(q)}
}

type condParser struct {
	src  string
	toks []token
	i    int
}

func (p *condParser) peek() token { return p.toks[p.i] }
func (p *condParser) next() token {
	t := p.toks[p.i]
	if t.kind != tkEOF {
		p.i++
	}
	return t
}

func (p *condParser) errAt(t token, format string, a ...any) error {
	return &condError{p.src, t.pos, fmt.Sprintf(format, a...)}
}

// parseCond parses a condition. References are not resolved: they are
// placeholders until evaluation.
func parseCond(src string) (*cond, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &condError{src, 0, "empty condition"}
	}
	toks, err := lexCond(src)
	if err != nil {
		return nil, err
	}
	p := &condParser{src: src, toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tkEOF {
		return nil, p.errAt(t, "unexpected %q after a complete expression: join conditions with && or ||", t.text)
	}
	return &cond{src: src, root: n}, nil
}

func (p *condParser) or() (cnode, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tkOr {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = orNode{l, r}
	}
	return l, nil
}

func (p *condParser) and() (cnode, error) {
	l, err := p.cmp()
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tkAnd {
		p.next()
		r, err := p.cmp()
		if err != nil {
			return nil, err
		}
		l = andNode{l, r}
	}
	return l, nil
}

func (p *condParser) cmp() (cnode, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tkCmp {
		return l, nil
	}
	op := p.next()
	r, err := p.unary()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tkCmp {
		return nil, p.errAt(t, "comparisons do not chain: write (a %s b) && (b %s c)", op.text, t.text)
	}
	return cmpNode{op.text, l, r}, nil
}

func (p *condParser) unary() (cnode, error) {
	if p.peek().kind == tkNot {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode{x}, nil
	}
	return p.primary()
}

func (p *condParser) primary() (cnode, error) {
	t := p.next()
	switch t.kind {
	case tkNumber:
		return litNode{t.num}, nil
	case tkString:
		return strNode{t.str}, nil
	case tkRef:
		return refNode{t.ref}, nil
	case tkWord:
		switch t.text {
		case "true":
			return litNode{true}, nil
		case "false":
			return litNode{false}, nil
		case "null":
			return litNode{nil}, nil
		}
		return nil, p.errAt(t, "unexpected word %q: quote strings ('%s') and refer to outputs as ${step.field}", t.text, t.text)
	case tkLParen:
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tkRParen {
			return nil, p.errAt(c, "missing ')'")
		}
		return n, nil
	case tkEOF:
		return nil, p.errAt(t, "expression ends too early: a value is missing")
	}
	return nil, p.errAt(t, "unexpected %q: expected a value", t.text)
}

// refs appends the condition's references.
func (c *cond) refs(field string, dst []fieldRef) []fieldRef {
	var walk func(n cnode)
	walk = func(n cnode) {
		switch x := n.(type) {
		case strNode:
			for _, s := range x.t.segs {
				if s.isRef {
					dst = append(dst, fieldRef{field, s.ref})
				}
			}
		case refNode:
			dst = append(dst, fieldRef{field, x.r})
		case notNode:
			walk(x.x)
		case andNode:
			walk(x.l)
			walk(x.r)
		case orNode:
			walk(x.l)
			walk(x.r)
		case cmpNode:
			walk(x.l)
			walk(x.r)
		}
	}
	walk(c.root)
	return dst
}

func condRefs(src, field string, dst []fieldRef) []fieldRef {
	if src == "" {
		return dst
	}
	c, err := parseCond(src)
	if err != nil {
		return dst
	}
	return c.refs(field, dst)
}

// eval evaluates the condition; references are looked up lazily, so the
// right side of a short-circuited && or || is never resolved.
func (c *cond) eval(rs *resolver) (bool, error) {
	v, err := c.value(rs, c.root)
	if err != nil {
		return false, fmt.Errorf("condition %q: %w", c.src, err)
	}
	return condTruthy(v), nil
}

func (c *cond) value(rs *resolver, n cnode) (any, error) {
	switch x := n.(type) {
	case litNode:
		return x.v, nil
	case strNode:
		return rs.expand(x.t)
	case refNode:
		v, err := rs.value(x.r)
		if err != nil {
			return nil, err
		}
		return condNormalize(v), nil
	case notNode:
		v, err := c.value(rs, x.x)
		if err != nil {
			return nil, err
		}
		return !condTruthy(v), nil
	case andNode:
		l, err := c.value(rs, x.l)
		if err != nil || !condTruthy(l) {
			return false, err
		}
		r, err := c.value(rs, x.r)
		return condTruthy(r), err
	case orNode:
		l, err := c.value(rs, x.l)
		if err != nil || condTruthy(l) {
			return err == nil, err
		}
		r, err := c.value(rs, x.r)
		return condTruthy(r), err
	case cmpNode:
		l, err := c.value(rs, x.l)
		if err != nil {
			return nil, err
		}
		r, err := c.value(rs, x.r)
		if err != nil {
			return nil, err
		}
		return condCompare(x.op, l, r)
	}
	return nil, fmt.Errorf("internal error: unknown node %T", n)
}

// normalize turns json.Number into float64, deeply.
func condNormalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = condNormalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = condNormalize(e)
		}
		return out
	}
	return v
}

func condTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		s := strings.TrimSpace(x)
		return s != "" && !strings.EqualFold(s, "false")
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// asNumber returns v as a number if it is one or is a string holding one.
func condNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

func condCompare(op string, l, r any) (bool, error) {
	_, lnum := l.(float64)
	_, rnum := r.(float64)
	if op == "contains" {
		return condContains(l, r)
	}
	if lnum || rnum {
		lf, lok := condNumber(l)
		rf, rok := condNumber(r)
		if lok && rok {
			switch op {
			case "==":
				return lf == rf, nil
			case "!=":
				return lf != rf, nil
			case "<":
				return lf < rf, nil
			case "<=":
				return lf <= rf, nil
			case ">":
				return lf > rf, nil
			case ">=":
				return lf >= rf, nil
			}
		}
	}
	switch op {
	case "==":
		return reflect.DeepEqual(l, r), nil
	case "!=":
		return !reflect.DeepEqual(l, r), nil
	}
	ls, lok := l.(string)
	rs, rok := r.(string)
	if !lok || !rok {
		return false, fmt.Errorf("cannot order %s and %s with %s: both must be numbers or both strings", condDescribe(l), condDescribe(r), op)
	}
	switch op {
	case "<":
		return ls < rs, nil
	case "<=":
		return ls <= rs, nil
	case ">":
		return ls > rs, nil
	default:
		return ls >= rs, nil
	}
}

func condContains(l, r any) (bool, error) {
	switch x := l.(type) {
	case string:
		return strings.Contains(x, valueText(r)), nil
	case []any:
		for _, e := range x {
			if eq, _ := condCompare("==", e, r); eq {
				return true, nil
			}
		}
		return false, nil
	case map[string]any:
		_, ok := x[valueText(r)]
		return ok, nil
	case nil:
		return false, nil
	}
	return false, fmt.Errorf("%s contains ...: the left side must be a string, an array or an object", condDescribe(l))
}

func condDescribe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return jsonTypeName(v)
}

func evalCondition(expr string, out Outputs) (bool, error) {
	c, err := parseCond(expr)
	if err != nil {
		return false, err
	}
	return c.eval(newResolver(out))
}
