package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// References name earlier steps' outputs inside strings:
//
//	"$read"                the whole output of step read, with its JSON type,
//	                       when it is the whole string;
//	"${read}"              the same;
//	"${test.stdout}"       a field; "${search.files[0]}" an element;
//	                       "${a.b["odd key"]}" a quoted key; [-1] the last element;
//	"$$"                   a literal dollar.
//
// Inside a longer string a reference is replaced by its value as text:
// strings as they are, anything else as compact JSON. A "$" followed by
// anything but "{" or "$" inside a longer string is literal text, so shell
// commands such as "echo $HOME" need no escaping ("${HOME}" does: "$${HOME}").
//
// Step ids may contain dots. In "${a.b.c}" the step is the longest prefix
// that names a step of the plan (at validation) or a step with an output (at
// run time); without such knowledge the id runs to the first "." or "[".

// idPattern is the syntax of a step id.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// ref is one reference as written.
type ref struct {
	// body is what stands between "${" and "}", or the id after "$".
	body string
	// bare is the "$id" form (no braces, whole output).
	bare bool
}

// String returns the reference as written.
func (r ref) String() string {
	if r.bare {
		return "$" + r.body
	}
	return "${" + r.body + "}"
}

// pathElem is one step of a path into an output.
type pathElem struct {
	key     string
	index   int
	isIndex bool
}

func (e pathElem) String() string {
	if e.isIndex {
		return "[" + strconv.Itoa(e.index) + "]"
	}
	if isPlainKey(e.key) {
		return "." + e.key
	}
	return "[" + strconv.Quote(e.key) + "]"
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// split resolves the reference into a step id and a path. known reports
// whether an id names a step; nil means "no knowledge" (the id then runs to
// the first "." or "[").
func (r ref) split(known func(string) bool) (string, []pathElem, error) {
	if r.bare {
		if !idPattern.MatchString(r.body) {
			return "", nil, fmt.Errorf("reference %s: %q is not a step id", r, r.body)
		}
		return r.body, nil, nil
	}
	body := r.body
	if body == "" {
		return "", nil, fmt.Errorf("empty reference ${}: write ${step} or ${step.field}")
	}
	// Split points: every "." or "[" outside brackets.
	var cuts []int
	depth := 0
	var quote byte
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case depth > 0 && (c == '"' || c == '\''):
			quote = c
		case c == '[':
			if depth == 0 {
				cuts = append(cuts, i)
			}
			depth++
		case c == ']':
			depth--
		case c == '.' && depth == 0:
			cuts = append(cuts, i)
		}
	}
	cuts = append(cuts, len(body))
	cut := cuts[0]
	if known != nil {
		for j := len(cuts) - 1; j >= 0; j-- {
			if idPattern.MatchString(body[:cuts[j]]) && known(body[:cuts[j]]) {
				cut = cuts[j]
				break
			}
		}
	}
	id := body[:cut]
	if !idPattern.MatchString(id) {
		return "", nil, fmt.Errorf("reference %s: %q is not a step id (ids are [A-Za-z0-9_.-]+)", r, id)
	}
	path, err := parsePath(body[cut:])
	if err != nil {
		return "", nil, fmt.Errorf("reference %s: %w", r, err)
	}
	return id, path, nil
}

// parsePath parses ".field[0]["key"]".
func parsePath(s string) ([]pathElem, error) {
	var out []pathElem
	for len(s) > 0 {
		switch s[0] {
		case '.':
			s = s[1:]
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			key := s[:end]
			if key == "" {
				return nil, fmt.Errorf("empty field name")
			}
			if strings.ContainsAny(key, "]\"'") {
				return nil, fmt.Errorf("bad field name %q: quote it as [\"name\"]", key)
			}
			out = append(out, pathElem{key: key})
			s = s[end:]
		case '[':
			end := closingBracket(s)
			if end < 0 {
				return nil, fmt.Errorf("missing ] in %q", s)
			}
			inner := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			if inner == "" {
				return nil, fmt.Errorf("empty []: write [0] or [\"key\"]")
			}
			if inner[0] == '"' || inner[0] == '\'' {
				key, err := unquoteKey(inner)
				if err != nil {
					return nil, err
				}
				out = append(out, pathElem{key: key})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil {
				return nil, fmt.Errorf("bad index [%s]: write a number or a quoted key", inner)
			}
			out = append(out, pathElem{index: n, isIndex: true})
		default:
			return nil, fmt.Errorf("unexpected %q: a path continues with .field or [index]", s)
		}
	}
	return out, nil
}

// closingBracket returns the index of the "]" closing the index that
// starts s ("[..."), skipping quoted keys.
func closingBracket(s string) int { return closeQuoted(s, 1, ']') }

func unquoteKey(s string) (string, error) {
	if len(s) < 2 || s[len(s)-1] != s[0] {
		return "", fmt.Errorf("unterminated key %s", s)
	}
	if s[0] == '\'' {
		s = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:len(s)-1], `"`, `\"`), `\'`, `'`) + `"`
	}
	k, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("bad quoted key %s", s)
	}
	return k, nil
}

// segment is a piece of a template: literal text, or a reference.
type segment struct {
	text  string
	ref   ref
	isRef bool
}

// template is a string split into literal text and references.
type template struct {
	segs []segment
	// whole is set when the string is exactly one reference: it then keeps
	// the referenced value's JSON type.
	whole bool
}

func (t template) hasRefs() bool {
	for _, s := range t.segs {
		if s.isRef {
			return true
		}
	}
	return false
}

// parseTemplate splits s into text and references.
func parseTemplate(s string) (template, error) {
	if !strings.Contains(s, "$") {
		return template{segs: []segment{{text: s}}}, nil
	}
	if len(s) > 1 && s[0] == '$' && s[1] != '{' && s[1] != '$' && idPattern.MatchString(s[1:]) {
		return template{segs: []segment{{ref: ref{body: s[1:], bare: true}, isRef: true}}, whole: true}, nil
	}
	var t template
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			t.segs = append(t.segs, segment{text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			text.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			text.WriteByte('$')
			i++
		case '{':
			end := refEnd(s, i+2)
			if end < 0 {
				return template{}, fmt.Errorf("unterminated reference %q: close it with } (write $$ for a literal dollar)", s[i:])
			}
			flush()
			t.segs = append(t.segs, segment{ref: ref{body: strings.TrimSpace(s[i+2 : end])}, isRef: true})
			i = end
		default:
			text.WriteByte(c)
		}
	}
	flush()
	t.whole = len(t.segs) == 1 && t.segs[0].isRef
	return t, nil
}

// refEnd returns the index of the "}" closing a reference body starting at
// i, skipping quoted keys.
func refEnd(s string, i int) int { return closeQuoted(s, i, '}') }

// closeQuoted returns the index of the first end byte at or after i that
// is not inside a quoted ('...' or "...", with backslash escapes) key, or -1.
func closeQuoted(s string, i int, end byte) int {
	var quote byte
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == end:
			return i
		}
	}
	return -1
}

// resolver looks references up in outputs, decoding each output once.
type resolver struct {
	out     Outputs
	decoded map[string]any
}

func newResolver(out Outputs) *resolver { return &resolver{out: out, decoded: map[string]any{}} }

func (rs *resolver) known(id string) bool {
	_, ok := rs.out[id]
	return ok
}

// value returns the referenced value (decoded JSON, numbers as json.Number).
func (rs *resolver) value(r ref) (any, error) {
	id, path, err := r.split(rs.known)
	if err != nil {
		return nil, err
	}
	v, ok := rs.decoded[id]
	if !ok {
		raw, has := rs.out[id]
		if !has {
			return nil, fmt.Errorf("reference %s: step %q has no output (it has not run, or it was skipped or failed)", r, id)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			v = nil
		} else if v, err = decodeJSON(raw); err != nil {
			return nil, fmt.Errorf("reference %s: output of step %q is not JSON: %w", r, id, err)
		}
		rs.decoded[id] = v
	}
	where := id
	for _, el := range path {
		switch x := v.(type) {
		case map[string]any:
			if el.isIndex {
				return nil, fmt.Errorf("reference %s: %s is an object, not an array; use .field", r, where)
			}
			next, ok := x[el.key]
			if !ok {
				return nil, fmt.Errorf("reference %s: %s has no field %q (fields: %s)", r, where, el.key, strings.Join(sortedKeys(x), ", "))
			}
			v = next
		case []any:
			if !el.isIndex {
				return nil, fmt.Errorf("reference %s: %s is an array of %d, not an object; use [index]", r, where, len(x))
			}
			i := el.index
			if i < 0 {
				i += len(x)
			}
			if i < 0 || i >= len(x) {
				return nil, fmt.Errorf("reference %s: index %d out of range: %s has %d elements", r, el.index, where, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("reference %s: %s is %s, which has no %s", r, where, jsonTypeName(v), strings.TrimPrefix(el.String(), "."))
		}
		where += el.String()
	}
	return v, nil
}

// valueText renders a value for interpolation: strings as they are, others as
// compact JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := marshalJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// expand renders a template as a string.
func (rs *resolver) expand(t template) (string, error) {
	if len(t.segs) == 1 && !t.segs[0].isRef {
		return t.segs[0].text, nil
	}
	var b strings.Builder
	for _, s := range t.segs {
		if !s.isRef {
			b.WriteString(s.text)
			continue
		}
		v, err := rs.value(s.ref)
		if err != nil {
			return "", err
		}
		b.WriteString(valueText(v))
	}
	return b.String(), nil
}

// resolveValue replaces references in every string of v (decoded JSON).
func (rs *resolver) resolveValue(v any, field string) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "$") {
			return x, nil
		}
		t, err := parseTemplate(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if t.whole {
			val, err := rs.value(t.segs[0].ref)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			return val, nil
		}
		s, err := rs.expand(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return s, nil
	case map[string]any:
		for k, e := range x {
			r, err := rs.resolveValue(e, field+fieldSep(k))
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
		return x, nil
	case []any:
		for i, e := range x {
			r, err := rs.resolveValue(e, field+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
		return x, nil
	}
	return v, nil
}

func fieldSep(k string) string {
	if isPlainKey(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func resolveArgs(args json.RawMessage, out Outputs) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 || !bytes.Contains(args, []byte("$")) {
		return args, nil
	}
	v, err := decodeJSON(args)
	if err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	v, err = newResolver(out).resolveValue(v, "args")
	if err != nil {
		return nil, err
	}
	return marshalJSON(v)
}

func interpolate(s string, out Outputs) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	t, err := parseTemplate(s)
	if err != nil {
		return "", err
	}
	return newResolver(out).expand(t)
}

// stepRefs lists the references of a step with the field each is in.
type fieldRef struct {
	field string
	ref   ref
}

// templateRefs appends every reference in s (a template), ignoring syntax
// errors (validation reports those).
func templateRefs(s string, field string, dst []fieldRef) []fieldRef {
	if !strings.Contains(s, "$") {
		return dst
	}
	t, err := parseTemplate(s)
	if err != nil {
		return dst
	}
	for _, sg := range t.segs {
		if sg.isRef {
			dst = append(dst, fieldRef{field, sg.ref})
		}
	}
	return dst
}

func valueRefs(v any, field string, dst []fieldRef) []fieldRef {
	switch x := v.(type) {
	case string:
		return templateRefs(x, field, dst)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			dst = valueRefs(x[k], field+fieldSep(k), dst)
		}
	case []any:
		for i, e := range x {
			dst = valueRefs(e, field+"["+strconv.Itoa(i)+"]", dst)
		}
	}
	return dst
}

// fieldRefs returns every reference of the step with the field it is in.
func (s *Step) fieldRefs() []fieldRef {
	var args any
	if len(s.Args) > 0 && bytes.Contains(s.Args, []byte("$")) {
		args, _ = decodeJSON(s.Args)
	}
	return s.fieldRefsWith(args)
}

// fieldRefsWith is fieldRefs with the step's args already decoded (nil if
// they hold no reference).
func (s *Step) fieldRefsWith(args any) []fieldRef {
	var out []fieldRef
	if args != nil {
		out = valueRefs(args, "args", out)
	}
	out = templateRefs(s.Prompt, "prompt", out)
	out = condRefs(s.When, "when", out)
	for i, c := range s.Checks {
		out = condRefs(c.Expr, "checks["+strconv.Itoa(i)+"].expr", out)
		out = templateRefs(c.Message, "checks["+strconv.Itoa(i)+"].message", out)
	}
	out = templateRefs(s.Question, "question", out)
	for i, o := range s.Options {
		out = templateRefs(o, "options["+strconv.Itoa(i)+"]", out)
	}
	for i, b := range s.Branches {
		out = condRefs(b.When, "branches["+strconv.Itoa(i)+"].when", out)
	}
	return out
}

func (s *Step) references() []string { return s.referencedIDs(nil) }

// References returns the step ids s refers to, resolving ids that contain
// dots against the steps of p (Step.References cannot).
func (p *Plan) References(s *Step) []string { return s.referencedIDs(p.hasStep) }

// referencedIDs lists the step ids of s's references once each, in order;
// known (may be nil) tells split which dotted ids name steps.
func (s *Step) referencedIDs(known func(string) bool) []string {
	var ids []string
	seen := map[string]bool{}
	for _, fr := range s.fieldRefs() {
		id, _, err := fr.ref.split(known)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}

func (p *Plan) hasStep(id string) bool { return p.Step(id) != nil }

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
