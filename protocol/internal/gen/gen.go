// Package gen turns the protocol's schema (docs/protocol.schema.json) into
// Go types (package protocol) and TypeScript types (the VS Code
// extension's src/protocol.gen.ts), as gopls generates its protocol from
// LSP's metaModel.json.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"sort"
	"strings"
	"unicode"
)

// Schema is the meta-model: methods, structures and string enumerations.
type Schema struct {
	Comment       string        `json:"$comment"`
	Version       int           `json:"version"`
	Requests      []Method      `json:"requests"`
	Notifications []Method      `json:"notifications"`
	Structures    []Structure   `json:"structures"`
	Enumerations  []Enumeration `json:"enumerations"`
}

// Method is a request (with a result) or a notification.
type Method struct {
	Method string `json:"method"`
	// Direction is clientToServer or serverToClient.
	Direction     string `json:"direction"`
	Params        *Type  `json:"params,omitempty"`
	Result        *Type  `json:"result,omitempty"`
	Documentation string `json:"documentation,omitempty"`
}

// Structure is a JSON object.
type Structure struct {
	Name          string     `json:"name"`
	Documentation string     `json:"documentation,omitempty"`
	Properties    []Property `json:"properties"`
}

// Property is a field of a structure; Embedded ones bring in the fields of
// the structure Type names (Go embedding, TypeScript extends), in place.
type Property struct {
	Name string `json:"name,omitempty"`
	Type Type   `json:"type"`
	// Optional: omitted when empty (Go omitempty, TypeScript ?).
	Optional bool `json:"optional,omitempty"`
	// Pointer: the Go field is a pointer, so that an optional zero value
	// (an empty string, 0) is still sent, or a required one can be null.
	Pointer  bool   `json:"pointer,omitempty"`
	Embedded bool   `json:"embedded,omitempty"`
	GoName   string `json:"goName,omitempty"`
	// OmitZero: omitted when zero (Go omitzero: a time not set).
	OmitZero bool `json:"omitZero,omitempty"`
	// TSOptional: always sent, but optional in TypeScript, where a
	// client copes with its absence (test fixtures, older servers).
	TSOptional bool `json:"tsOptional,omitempty"`
	// GoType replaces the Go type of a base-typed property (int32 for a
	// buffer version, as LSP has it).
	GoType string `json:"goType,omitempty"`
	// GoRaw: the Go field is json.RawMessage, whatever the type, because
	// the core decodes the value itself (a plan, a step, a run's options)
	// with its own checks and errors; TypeScript keeps the type.
	GoRaw         bool   `json:"goRaw,omitempty"`
	Documentation string `json:"documentation,omitempty"`
}

// Type is base (string, integer, number, boolean, DateTime, json, any,
// null), reference (a structure or enumeration of the schema), array,
// map (string keys) or lsp (a type of LSP's own, not redefined here).
type Type struct {
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	Element *Type  `json:"element,omitempty"`
	Value   *Type  `json:"value,omitempty"`
}

// Enumeration is a string union.
type Enumeration struct {
	Name          string      `json:"name"`
	Documentation string      `json:"documentation,omitempty"`
	Values        []EnumValue `json:"values"`
}

// EnumValue is one string of an enumeration; Name names its Go constant
// when the value cannot (the empty string).
type EnumValue struct {
	Value         string `json:"value"`
	Name          string `json:"name,omitempty"`
	Documentation string `json:"documentation,omitempty"`
}

// Load reads and checks the schema.
func Load(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the protocol schema: %w", err)
	}
	var s Schema
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

func (s *Schema) check() error {
	names := map[string]string{}
	for _, st := range s.Structures {
		if names[st.Name] != "" {
			return fmt.Errorf("%s is defined twice", st.Name)
		}
		names[st.Name] = "structure"
	}
	for _, e := range s.Enumerations {
		if names[e.Name] != "" {
			return fmt.Errorf("%s is defined twice", e.Name)
		}
		names[e.Name] = "enumeration"
	}
	var checkType func(where string, t *Type) error
	checkType = func(where string, t *Type) error {
		switch t.Kind {
		case "base":
			switch t.Name {
			case "string", "integer", "number", "boolean", "DateTime", "json", "any", "null":
				return nil
			}
			return fmt.Errorf("%s: unknown base type %q", where, t.Name)
		case "reference":
			if names[t.Name] == "" {
				return fmt.Errorf("%s: %s is not defined in the schema", where, t.Name)
			}
			return nil
		case "array":
			if t.Element == nil {
				return fmt.Errorf("%s: array without element", where)
			}
			return checkType(where, t.Element)
		case "map":
			if t.Value == nil {
				return fmt.Errorf("%s: map without value", where)
			}
			return checkType(where, t.Value)
		case "lsp":
			return nil
		}
		return fmt.Errorf("%s: unknown type kind %q", where, t.Kind)
	}
	for _, st := range s.Structures {
		for _, p := range st.Properties {
			if p.Embedded {
				if p.Type.Kind != "reference" || names[p.Type.Name] != "structure" {
					return fmt.Errorf("%s: only a structure can be embedded", st.Name)
				}
				continue
			}
			if p.Name == "" {
				return fmt.Errorf("%s: a property has no name", st.Name)
			}
			if err := checkType(st.Name+"."+p.Name, &p.Type); err != nil {
				return err
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range s.methods() {
		if seen[m.Method] {
			return fmt.Errorf("method %s is listed twice", m.Method)
		}
		seen[m.Method] = true
		if m.Direction != "clientToServer" && m.Direction != "serverToClient" {
			return fmt.Errorf("%s: direction %q is neither clientToServer nor serverToClient", m.Method, m.Direction)
		}
		for _, t := range []*Type{m.Params, m.Result} {
			if t != nil {
				if err := checkType(m.Method, t); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Schema) methods() []Method {
	return append(append([]Method(nil), s.Requests...), s.Notifications...)
}

// Methods lists every method's name.
func (s *Schema) Methods() []Method { return s.methods() }

// MethodConst is the name of a method's constant: agentd/plan/create is
// PlanCreate, textDocument/didOpen TextDocumentDidOpen, $/progress
// Progress.
func MethodConst(method string) string {
	m := strings.TrimPrefix(strings.TrimPrefix(method, "agentd/"), "$/")
	var b strings.Builder
	for _, part := range strings.Split(m, "/") {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

// initialisms are written in capitals in Go names.
var initialisms = map[string]string{"id": "ID", "ids": "IDs", "uri": "URI", "uris": "URIs", "url": "URL", "llm": "LLM", "sha": "SHA", "usd": "USD"}

// GoName is a property's Go field name: runId is RunID, oldUri OldURI.
func GoName(p Property) string {
	if p.GoName != "" {
		return p.GoName
	}
	var words []string
	start := 0
	rs := []rune(p.Name)
	for i := 1; i <= len(rs); i++ {
		if i == len(rs) || (unicode.IsUpper(rs[i]) && !unicode.IsUpper(rs[i-1])) {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	var b strings.Builder
	for _, w := range words {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
		} else {
			b.WriteString(upperFirst(w))
		}
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func enumConst(e Enumeration, v EnumValue) string {
	if v.Name != "" {
		return e.Name + v.Name
	}
	var b strings.Builder
	for _, w := range strings.FieldsFunc(v.Value, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }) {
		b.WriteString(upperFirst(w))
	}
	return e.Name + b.String()
}

func (s *Schema) isEnum(name string) bool {
	for _, e := range s.Enumerations {
		if e.Name == name {
			return true
		}
	}
	return false
}

func (s *Schema) goType(t Type, optional, pointer bool) string {
	switch t.Kind {
	case "base":
		base := map[string]string{"string": "string", "integer": "int", "number": "float64", "boolean": "bool",
			"DateTime": "time.Time", "json": "json.RawMessage", "any": "any", "null": "any"}[t.Name]
		if pointer {
			return "*" + base
		}
		return base
	case "reference":
		if s.isEnum(t.Name) {
			// A field of an enumeration is a plain string in Go, so the
			// core's string types convert without ceremony; the
			// enumeration's constants name its values.
			if pointer {
				return "*string"
			}
			return "string"
		}
		if optional || pointer {
			return "*" + t.Name
		}
		return t.Name
	case "array":
		return "[]" + s.goType(*t.Element, false, false)
	case "map":
		return "map[string]" + s.goType(*t.Value, false, false)
	case "lsp":
		return "json.RawMessage"
	}
	panic(t.Kind)
}

func comment(b *bytes.Buffer, indent, name, doc string) {
	if doc == "" {
		return
	}
	text := doc
	if name != "" {
		text = name + ": " + doc
	}
	for _, line := range wrap(text, 76) {
		fmt.Fprintf(b, "%s// %s\n", indent, line)
	}
}

func wrap(s string, width int) []string {
	var lines []string
	var cur string
	for _, w := range strings.Fields(s) {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

const header = "Code generated by go generate ./protocol from docs/protocol.schema.json; DO NOT EDIT."

// Go writes package protocol's types.
func (s *Schema) Go() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n\npackage protocol\n\nimport (\n\t\"encoding/json\"\n\t\"time\"\n)\n\n", header)
	fmt.Fprintf(&b, "// Version is the protocol version (capabilities.experimental.agentd.protocolVersion).\nconst Version = %d\n\n", s.Version)
	b.WriteString("// The methods, by name.\nconst (\n")
	for _, m := range s.methods() {
		fmt.Fprintf(&b, "\tMethod%s = %q\n", MethodConst(m.Method), m.Method)
	}
	b.WriteString(")\n\n")
	b.WriteString("// Methods lists every method of the protocol with its direction.\nvar Methods = []MethodInfo{\n")
	for _, m := range s.Requests {
		fmt.Fprintf(&b, "\t{Method%s, %s, false},\n", MethodConst(m.Method), dirConst(m.Direction))
	}
	for _, m := range s.Notifications {
		fmt.Fprintf(&b, "\t{Method%s, %s, true},\n", MethodConst(m.Method), dirConst(m.Direction))
	}
	b.WriteString("}\n\n")
	for _, e := range s.Enumerations {
		comment(&b, "", e.Name, e.Documentation)
		fmt.Fprintf(&b, "type %s string\n\nconst (\n", e.Name)
		for _, v := range e.Values {
			comment(&b, "\t", "", v.Documentation)
			fmt.Fprintf(&b, "\t%s %s = %q\n", enumConst(e, v), e.Name, v.Value)
		}
		b.WriteString(")\n\n")
	}
	for _, st := range s.Structures {
		comment(&b, "", st.Name, st.Documentation)
		fmt.Fprintf(&b, "type %s struct {\n", st.Name)
		for _, p := range st.Properties {
			comment(&b, "\t", "", p.Documentation)
			if p.Embedded {
				fmt.Fprintf(&b, "\t%s\n", p.Type.Name)
				continue
			}
			tag := p.Name
			if p.Optional {
				tag += ",omitempty"
			}
			if p.OmitZero {
				tag += ",omitzero"
			}
			typ := s.goType(p.Type, p.Optional, p.Pointer)
			if p.GoType != "" {
				typ = p.GoType
				if p.Pointer {
					typ = "*" + typ
				}
			}
			if p.GoRaw {
				typ = "json.RawMessage"
			}
			fmt.Fprintf(&b, "\t%s %s `json:%q`\n", GoName(p), typ, tag)
		}
		b.WriteString("}\n\n")
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the generated Go: %w", err)
	}
	return out, nil
}

func dirConst(d string) string {
	if d == "clientToServer" {
		return "ClientToServer"
	}
	return "ServerToClient"
}

func (s *Schema) tsType(t Type) string {
	switch t.Kind {
	case "base":
		return map[string]string{"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
			"DateTime": "string", "json": "unknown", "any": "unknown", "null": "null"}[t.Name]
	case "reference":
		return t.Name
	case "array":
		el := s.tsType(*t.Element)
		if strings.Contains(el, " ") {
			el = "(" + el + ")"
		}
		return el + "[]"
	case "map":
		return "Record<string, " + s.tsType(*t.Value) + ">"
	case "lsp":
		return "unknown"
	}
	panic(t.Kind)
}

func tsComment(b *bytes.Buffer, indent, doc string) {
	if doc == "" {
		return
	}
	lines := wrap(doc, 96)
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, lines[0])
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		fmt.Fprintf(b, "%s * %s\n", indent, l)
	}
	fmt.Fprintf(b, "%s */\n", indent)
}

// TypeScript writes the VS Code extension's wire types.
func (s *Schema) TypeScript() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n// The agentd protocol's wire types (docs/protocol.md); LSP's own types are not repeated here.\n\n", header)
	fmt.Fprintf(&b, "export const PROTOCOL_VERSION = %d;\n\n", s.Version)
	b.WriteString("/** The methods, by name. */\nexport const Method = {\n")
	for _, m := range s.methods() {
		fmt.Fprintf(&b, "  %s: '%s',\n", MethodConst(m.Method), m.Method)
	}
	b.WriteString("} as const;\n\n")
	for _, e := range s.Enumerations {
		tsComment(&b, "", e.Documentation)
		var vals []string
		for _, v := range e.Values {
			vals = append(vals, "'"+v.Value+"'")
		}
		fmt.Fprintf(&b, "export type %s = %s;\n\n", e.Name, strings.Join(vals, " | "))
	}
	for _, st := range s.Structures {
		tsComment(&b, "", st.Documentation)
		var ext []string
		for _, p := range st.Properties {
			if p.Embedded {
				ext = append(ext, p.Type.Name)
			}
		}
		sort.Strings(ext)
		fmt.Fprintf(&b, "export interface %s ", st.Name)
		if len(ext) > 0 {
			fmt.Fprintf(&b, "extends %s ", strings.Join(ext, ", "))
		}
		b.WriteString("{\n")
		for _, p := range st.Properties {
			if p.Embedded {
				continue
			}
			tsComment(&b, "  ", p.Documentation)
			opt := ""
			if p.Optional || p.OmitZero || p.TSOptional {
				opt = "?"
			}
			typ := s.tsType(p.Type)
			if p.Pointer && !p.Optional {
				typ += " | null"
			}
			fmt.Fprintf(&b, "  %s%s: %s;\n", p.Name, opt, typ)
		}
		b.WriteString("}\n\n")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// The schema and the generated files, relative to the module's root.
const (
	SchemaPath = "docs/protocol.schema.json"
	GoPath     = "protocol/protocol_gen.go"
	TSPath     = "editors/vscode/src/protocol.gen.ts"
)
