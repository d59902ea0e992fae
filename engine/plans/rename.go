package plans

import (
	"strings"
)

// Renamed returns a deep copy of s with step ids renamed by rename (old ->
// new): its own id, dependsOn, the steps of its branches, and every
// reference in args, prompt, question, options, when, checks and branch
// conditions. Text that is not a reference is kept byte for byte, so "$$"
// escapes and shell variables survive. Re-planning uses it to prefix merged
// steps with _rp<N>_.
func (s *Step) Renamed(rename map[string]string) *Step {
	c := s.Clone()
	if c == nil || len(rename) == 0 {
		return c
	}
	ren := func(id string) string {
		if n, ok := rename[id]; ok {
			return n
		}
		return id
	}
	c.ID = ren(c.ID)
	for i, d := range c.DependsOn {
		c.DependsOn[i] = ren(d)
	}
	for i := range c.Branches {
		for j, id := range c.Branches[i].Steps {
			c.Branches[i].Steps[j] = ren(id)
		}
		c.Branches[i].When = renameCondRefs(c.Branches[i].When, rename)
	}
	if len(c.Args) > 0 && strings.Contains(string(c.Args), "$") {
		if v, err := decodeJSON(c.Args); err == nil {
			changed := false
			v = mapStrings(v, func(str string) string {
				n := renameTemplateRefs(str, rename)
				changed = changed || n != str
				return n
			})
			if b, err := marshalJSON(v); err == nil && changed {
				c.Args = b
			}
		}
	}
	c.Prompt = renameTemplateRefs(c.Prompt, rename)
	c.Question = renameTemplateRefs(c.Question, rename)
	for i, o := range c.Options {
		c.Options[i] = renameTemplateRefs(o, rename)
	}
	c.When = renameCondRefs(c.When, rename)
	for i := range c.Checks {
		c.Checks[i].Expr = renameCondRefs(c.Checks[i].Expr, rename)
		c.Checks[i].Message = renameTemplateRefs(c.Checks[i].Message, rename)
	}
	return c
}

// mapStrings applies f to every string in decoded JSON.
func mapStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		for k, e := range x {
			x[k] = mapStrings(e, f)
		}
	case []any:
		for i, e := range x {
			x[i] = mapStrings(e, f)
		}
	}
	return v
}

// renameRefBody renames the step id at the start of a reference body (the
// longest prefix that is a key of rename), keeping the path as written.
func renameRefBody(body string, rename map[string]string) string {
	trimmed := strings.TrimLeft(body, " \t")
	lead := body[:len(body)-len(trimmed)]
	id, _, err := ref{body: strings.TrimRight(trimmed, " \t")}.split(func(id string) bool {
		_, ok := rename[id]
		return ok
	})
	n, ok := rename[id]
	if err != nil || !ok {
		return body
	}
	return lead + n + trimmed[len(id):]
}

// renameTemplateRefs renames references in a template string.
func renameTemplateRefs(s string, rename map[string]string) string {
	if !strings.Contains(s, "$") || len(rename) == 0 {
		return s
	}
	if len(s) > 1 && s[0] == '$' && s[1] != '{' && s[1] != '$' && idPattern.MatchString(s[1:]) {
		if n, ok := rename[s[1:]]; ok {
			return "$" + n
		}
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteString("$$")
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			end := refEnd(s, i+2)
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			b.WriteString("${" + renameRefBody(s[i+2:end], rename) + "}")
			i = end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// renameCondRefs renames references in a condition; a condition that does
// not parse is returned as it is.
func renameCondRefs(src string, rename map[string]string) string {
	if !strings.Contains(src, "$") || len(rename) == 0 {
		return src
	}
	toks, err := lexCond(src)
	if err != nil {
		return src
	}
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if t.kind != tkRef && t.kind != tkString {
			continue
		}
		b.WriteString(src[last:t.pos])
		switch {
		case t.kind == tkString:
			q := t.text[:1]
			b.WriteString(q + renameTemplateRefs(t.text[1:len(t.text)-1], rename) + q)
		case t.ref.bare:
			if n, ok := rename[t.ref.body]; ok {
				b.WriteString("$" + n)
			} else {
				b.WriteString(t.text)
			}
		default:
			b.WriteString("${" + renameRefBody(t.text[2:len(t.text)-1], rename) + "}")
		}
		last = t.pos + len(t.text)
	}
	b.WriteString(src[last:])
	return b.String()
}
