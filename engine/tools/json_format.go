package tools

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Formatting a patched JSON document in the style of the original: the
// indentation unit, and containers the original wrote on one line
// (`"files": ["dist", "lib"]`) stay on one line, so a patch does not
// reformat parts of the file it did not touch.

// jsonLayout is what formatJSON keeps from the original document.
type jsonLayout struct {
	indent     string
	inline     map[string]bool // JSON pointers of containers written on one line
	inlineComa string          // separator inside one-line containers: "," or ", "
	inlineColn string          // ":" or ": "
}

// readLayout records which containers of doc are on one line.
func readLayout(doc []byte, indent string) jsonLayout {
	l := jsonLayout{indent: indent, inline: map[string]bool{}, inlineComa: ", ", inlineColn: ": "}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type frame struct {
		path   string
		start  int64
		obj    bool
		idx    int
		key    string
		expKey bool
	}
	var stack []*frame
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.obj {
			return f.path + "/" + escapePointer(f.key)
		}
		p := f.path + "/" + strconv.Itoa(f.idx)
		return p
	}
	after := func() { // a value of the innermost container is complete
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.obj {
			f.expKey = true
		} else {
			f.idx++
		}
	}
	sawComma, sawNoSpaceComma := false, false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{path: child(), start: dec.InputOffset() - 1, obj: t == '{', expKey: t == '{'})
			default:
				f := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				raw := doc[f.start:dec.InputOffset()]
				if !bytes.ContainsAny(raw, "\n") && len(raw) > 2 {
					l.inline[f.path] = true
					if inner := raw[1 : len(raw)-1]; bytes.Contains(inner, []byte(",")) {
						sawComma = true
						if !bytes.Contains(inner, []byte(", ")) {
							sawNoSpaceComma = true
						}
					}
					if f.obj && !bytes.Contains(raw, []byte(": ")) {
						l.inlineColn = ":"
					}
				}
				after()
			}
		case string:
			if f := top(stack); f != nil && f.obj && f.expKey {
				f.key, f.expKey = t, false
				continue
			}
			after()
		default:
			after()
		}
	}
	if sawComma && sawNoSpaceComma {
		l.inlineComa = ","
	}
	return l
}

func top[T any](s []*T) *T {
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// formatJSON writes compact (valid, compact JSON) in layout l.
func formatJSON(compact []byte, l jsonLayout) []byte {
	f := &jsonFormatter{in: compact, l: l}
	f.value("", 0, false)
	return f.out.Bytes()
}

type jsonFormatter struct {
	in  []byte
	pos int
	out bytes.Buffer
	l   jsonLayout
}

// value formats the value at f.pos; path is its JSON pointer.
func (f *jsonFormatter) value(path string, depth int, inline bool) {
	c := f.in[f.pos]
	if c != '{' && c != '[' {
		f.scalar()
		return
	}
	closer := byte('}')
	if c == '[' {
		closer = ']'
	}
	f.pos++
	if f.in[f.pos] == closer {
		f.pos++
		f.out.WriteByte(c)
		f.out.WriteByte(closer)
		return
	}
	inline = inline || f.l.inline[path]
	f.out.WriteByte(c)
	for i := 0; ; i++ {
		if !inline {
			f.newline(depth + 1)
		}
		childPath := path + "/" + strconv.Itoa(i)
		if c == '{' {
			keyStart := f.pos
			f.scalar()
			var key string
			_ = json.Unmarshal(f.in[keyStart:f.pos], &key)
			childPath = path + "/" + escapePointer(key)
			f.pos++ // ':'
			if inline {
				f.out.WriteString(f.l.inlineColn)
			} else {
				f.out.WriteString(": ")
			}
		}
		f.value(childPath, depth+1, inline)
		if f.in[f.pos] == ',' {
			f.pos++
			if inline {
				f.out.WriteString(f.l.inlineComa)
			} else {
				f.out.WriteByte(',')
			}
			continue
		}
		f.pos++ // closer
		if !inline {
			f.newline(depth)
		}
		f.out.WriteByte(closer)
		return
	}
}

func (f *jsonFormatter) newline(depth int) {
	f.out.WriteByte('\n')
	for range depth {
		f.out.WriteString(f.l.indent)
	}
}

// scalar copies a string, number or literal as it is.
func (f *jsonFormatter) scalar() {
	start := f.pos
	if f.in[f.pos] == '"' {
		f.pos++
		for f.in[f.pos] != '"' {
			if f.in[f.pos] == '\\' {
				f.pos++
			}
			f.pos++
		}
		f.pos++
	} else {
		for f.pos < len(f.in) && !strings.ContainsRune(",]}:", rune(f.in[f.pos])) {
			f.pos++
		}
	}
	f.out.Write(f.in[start:f.pos])
}
