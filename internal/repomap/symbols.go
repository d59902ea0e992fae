package repomap

import (
	"context"
	"strings"
	"unicode"
)

// Symbol is one top-level definition of a file.
type Symbol struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // func, method, type, class, interface, struct, enum, trait, const, var, macro, module
	Line int    `json:"line"` // 1-based
}

// extractor walks one file's syntax tree for its top-level symbols.
type extractor struct {
	src  []byte
	lang *lang
	syms []Symbol
	// inClass is set while a C++ class body is visited.
	inClass bool
}

// symbolsOf parses src as l and returns its top-level symbols (and the
// members of top-level classes, impls and namespaces).
func symbolsOf(ctx context.Context, w *parsers, l *lang, src []byte) ([]Symbol, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	tree, err := p.tree(ctx, l, src)
	if err != nil {
		return nil, err
	}
	x := &extractor{src: src, lang: l}
	x.block(tree.root(), "", 0)
	return x.syms, nil
}

func (x *extractor) text(n *tsNode) string {
	if n == nil {
		return ""
	}
	s, e := n.ByteRange()
	if e > uint(len(x.src)) || s > e {
		return ""
	}
	t := string(x.src[s:e])
	if len(t) > 120 {
		t = t[:120]
	}
	return t
}

func (x *extractor) add(n *tsNode, name, kind, container string) {
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, "\n\r") {
		return
	}
	if container != "" {
		name = container + "." + name
	}
	x.syms = append(x.syms, Symbol{Name: name, Kind: kind, Line: n.StartRow() + 1})
}

func (x *extractor) children(n *tsNode) []tsNode {
	if n == nil {
		return nil
	}
	return n.NamedChildren()
}

func (x *extractor) field(n *tsNode, name string) *tsNode {
	if n == nil {
		return nil
	}
	return n.ChildByFieldName(name)
}

// block visits the statements of a file, namespace or class body. depth
// bounds how deep containers nest (a class in a namespace in a file).
func (x *extractor) block(n *tsNode, container string, depth int) {
	if n == nil || depth > 3 {
		return
	}
	for _, c := range x.children(n) {
		x.node(&c, container, depth)
	}
}

func (x *extractor) node(n *tsNode, container string, depth int) {
	switch x.lang {
	case langGo:
		x.goNode(n)
	case langJS, langTS, langTSX:
		x.jsNode(n, container, depth)
	case langPython:
		x.pyNode(n, container, depth)
	case langRust:
		x.rustNode(n, container, depth)
	case langLua:
		x.luaNode(n)
	case langJava:
		x.javaNode(n, container, depth)
	case langC, langCPP:
		x.cNode(n, container, depth)
	}
}

func (x *extractor) goNode(n *tsNode) {
	switch n.Kind() {
	case "function_declaration":
		x.add(n, x.text(x.field(n, "name")), "func", "")
	case "method_declaration":
		recv := ""
		if r := x.field(n, "receiver"); r != nil {
			for _, p := range x.children(r) {
				t := x.text(x.field(&p, "type"))
				t = strings.TrimLeft(t, "*")
				if i := strings.IndexByte(t, '['); i >= 0 {
					t = t[:i]
				}
				recv = t
			}
		}
		x.add(n, x.text(x.field(n, "name")), "method", recv)
	case "type_declaration":
		for _, s := range x.children(n) {
			if s.Kind() == "type_spec" || s.Kind() == "type_alias" {
				kind := "type"
				if t := x.field(&s, "type"); t != nil {
					switch t.Kind() {
					case "struct_type":
						kind = "struct"
					case "interface_type":
						kind = "interface"
					}
				}
				x.add(&s, x.text(x.field(&s, "name")), kind, "")
			}
		}
	case "const_declaration", "var_declaration":
		kind := "const"
		if n.Kind() == "var_declaration" {
			kind = "var"
		}
		var specs []tsNode
		for _, s := range x.children(n) {
			if s.Kind() == "var_spec_list" {
				specs = append(specs, x.children(&s)...)
			} else {
				specs = append(specs, s)
			}
		}
		for _, s := range specs {
			if s.Kind() != "const_spec" && s.Kind() != "var_spec" {
				continue
			}
			for _, id := range x.children(&s) {
				if id.Kind() == "identifier" {
					x.add(&id, x.text(&id), kind, "")
				}
			}
		}
	}
}

func (x *extractor) jsNode(n *tsNode, container string, depth int) {
	switch n.Kind() {
	case "export_statement":
		if d := x.field(n, "declaration"); d != nil {
			x.jsNode(d, container, depth)
		}
	case "function_declaration", "generator_function_declaration", "function_signature":
		x.add(n, x.text(x.field(n, "name")), "func", container)
	case "class_declaration", "abstract_class_declaration", "class":
		name := x.text(x.field(n, "name"))
		x.add(n, name, "class", container)
		if b := x.field(n, "body"); b != nil && name != "" {
			x.block(b, name, depth+1)
		}
	case "method_definition", "method_signature", "abstract_method_signature":
		if container != "" {
			x.add(n, x.text(x.field(n, "name")), "method", container)
		}
	case "interface_declaration":
		x.add(n, x.text(x.field(n, "name")), "interface", container)
	case "type_alias_declaration":
		x.add(n, x.text(x.field(n, "name")), "type", container)
	case "enum_declaration":
		x.add(n, x.text(x.field(n, "name")), "enum", container)
	case "internal_module", "module":
		name := x.text(x.field(n, "name"))
		x.add(n, name, "module", container)
		if b := x.field(n, "body"); b != nil {
			x.block(b, name, depth+1)
		}
	case "ambient_declaration":
		x.block(n, container, depth)
	case "lexical_declaration", "variable_declaration":
		if container != "" {
			return
		}
		kind := "var"
		if strings.HasPrefix(x.text(n), "const") {
			kind = "const"
		}
		for _, d := range x.children(n) {
			if d.Kind() != "variable_declarator" {
				continue
			}
			name := x.field(&d, "name")
			if name == nil || name.Kind() != "identifier" {
				continue
			}
			k := kind
			if v := x.field(&d, "value"); v != nil {
				switch v.Kind() {
				case "arrow_function", "function_expression", "function", "generator_function":
					k = "func"
				case "class":
					k = "class"
				}
			}
			x.add(&d, x.text(name), k, "")
		}
	}
}

func (x *extractor) pyNode(n *tsNode, container string, depth int) {
	switch n.Kind() {
	case "decorated_definition":
		if d := x.field(n, "definition"); d != nil {
			x.pyNode(d, container, depth)
		}
	case "function_definition":
		kind := "func"
		if container != "" {
			kind = "method"
		}
		x.add(n, x.text(x.field(n, "name")), kind, container)
	case "class_definition":
		name := x.text(x.field(n, "name"))
		x.add(n, name, "class", container)
		if b := x.field(n, "body"); b != nil && container == "" {
			x.block(b, name, depth+1)
		}
	case "expression_statement":
		if container != "" {
			return
		}
		for _, a := range x.children(n) {
			if a.Kind() != "assignment" {
				continue
			}
			if l := x.field(&a, "left"); l != nil && l.Kind() == "identifier" {
				name := x.text(l)
				kind := "var"
				if isUpper(name) {
					kind = "const"
				}
				x.add(&a, name, kind, "")
			}
		}
	}
}

func (x *extractor) rustNode(n *tsNode, container string, depth int) {
	kinds := map[string]string{
		"function_item": "func", "function_signature_item": "func", "struct_item": "struct", "enum_item": "enum",
		"union_item": "struct", "trait_item": "trait", "type_item": "type", "const_item": "const",
		"static_item": "var", "macro_definition": "macro",
	}
	switch k := n.Kind(); k {
	case "mod_item":
		name := x.text(x.field(n, "name"))
		x.add(n, name, "module", container)
		if b := x.field(n, "body"); b != nil {
			x.block(b, joinName(container, name), depth+1)
		}
	case "impl_item":
		t := x.text(x.field(n, "type"))
		if i := strings.IndexByte(t, '<'); i >= 0 {
			t = t[:i]
		}
		if b := x.field(n, "body"); b != nil && t != "" {
			x.block(b, joinName(container, t), depth+1)
		}
	case "attribute_item", "line_comment", "block_comment":
	default:
		if kind, ok := kinds[k]; ok {
			if container != "" && kind == "func" {
				kind = "method"
			}
			x.add(n, x.text(x.field(n, "name")), kind, container)
			if k == "trait_item" {
				// trait methods are found through the trait.
				return
			}
		}
	}
}

func (x *extractor) luaNode(n *tsNode) {
	switch n.Kind() {
	case "function_declaration":
		name := x.text(x.field(n, "name"))
		name = strings.ReplaceAll(name, ":", ".")
		x.add(n, name, "func", "")
	case "variable_declaration":
		for _, c := range x.children(n) {
			if c.Kind() == "assignment_statement" {
				x.luaAssign(&c)
			} else if c.Kind() == "variable_list" {
				for _, v := range x.children(&c) {
					if v.Kind() == "identifier" {
						x.add(&v, x.text(&v), "var", "")
					}
				}
			}
		}
	case "assignment_statement":
		x.luaAssign(n)
	}
}

func (x *extractor) luaAssign(n *tsNode) {
	var names []tsNode
	var values []tsNode
	for _, c := range x.children(n) {
		switch c.Kind() {
		case "variable_list":
			names = x.children(&c)
		case "expression_list":
			values = x.children(&c)
		}
	}
	for i, v := range names {
		if v.Kind() != "identifier" && v.Kind() != "dot_index_expression" {
			continue
		}
		kind := "var"
		if i < len(values) && values[i].Kind() == "function_definition" {
			kind = "func"
		}
		x.add(&v, x.text(&v), kind, "")
	}
}

func (x *extractor) javaNode(n *tsNode, container string, depth int) {
	switch n.Kind() {
	case "class_declaration", "interface_declaration", "enum_declaration", "record_declaration", "annotation_type_declaration":
		kind := map[string]string{"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
			"record_declaration": "class", "annotation_type_declaration": "interface"}[n.Kind()]
		name := x.text(x.field(n, "name"))
		x.add(n, name, kind, container)
		if b := x.field(n, "body"); b != nil && name != "" {
			x.block(b, joinName(container, name), depth+1)
		}
	case "enum_body":
		x.block(n, container, depth)
	case "enum_body_declarations":
		x.block(n, container, depth)
	case "method_declaration", "constructor_declaration":
		if container != "" {
			x.add(n, x.text(x.field(n, "name")), "method", container)
		}
	case "field_declaration", "constant_declaration":
		if container == "" {
			return
		}
		mods := ""
		for _, c := range x.children(n) {
			if c.Kind() == "modifiers" {
				mods = x.text(&c)
			}
		}
		if n.Kind() == "field_declaration" && !(strings.Contains(mods, "static") && strings.Contains(mods, "final")) {
			return
		}
		for _, c := range x.children(n) {
			if c.Kind() == "variable_declarator" {
				x.add(&c, x.text(x.field(&c, "name")), "const", container)
			}
		}
	}
}

// cNode handles C and C++.
func (x *extractor) cNode(n *tsNode, container string, depth int) {
	switch k := n.Kind(); k {
	case "function_definition":
		name, qual := x.declName(x.field(n, "declarator"))
		kind := "func"
		if x.inClass || qual {
			kind = "method"
		}
		x.add(n, name, kind, container)
	case "declaration", "field_declaration":
		// prototypes and global variables (headers declare the API).
		d := x.field(n, "declarator")
		if d == nil {
			x.cType(x.field(n, "type"), container, depth)
			return
		}
		name, _ := x.declName(d)
		kind := "var"
		if hasFunctionDeclarator(d) {
			kind = "func"
			if x.inClass {
				kind = "method"
			}
		} else if k == "field_declaration" {
			return // data members are not listed
		}
		x.add(n, name, kind, container)
		x.cType(x.field(n, "type"), container, depth)
	case "type_definition":
		if d := x.field(n, "declarator"); d != nil {
			name, _ := x.declName(d)
			x.add(n, name, "type", container)
		}
		x.cType(x.field(n, "type"), container, depth)
	case "struct_specifier", "union_specifier", "enum_specifier", "class_specifier":
		x.cType(n, container, depth)
	case "preproc_def", "preproc_function_def":
		if container == "" {
			x.add(n, x.text(x.field(n, "name")), "macro", "")
		}
	case "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "linkage_specification", "declaration_list":
		x.block(n, container, depth)
	case "namespace_definition":
		name := x.text(x.field(n, "name"))
		if b := x.field(n, "body"); b != nil {
			was := x.inClass
			x.inClass = false
			x.block(b, joinName(container, name), depth+1)
			x.inClass = was
		}
	case "template_declaration":
		for _, c := range x.children(n) {
			if c.Kind() != "template_parameter_list" {
				x.cNode(&c, container, depth)
			}
		}
	case "expression_statement":
		// Some C macros at file level parse as expressions; nothing to list.
	}
}

// cType lists a named struct, union, enum or class and, for C++, its methods.
func (x *extractor) cType(t *tsNode, container string, depth int) {
	if t == nil {
		return
	}
	kinds := map[string]string{"struct_specifier": "struct", "union_specifier": "struct", "enum_specifier": "enum", "class_specifier": "class"}
	kind, ok := kinds[t.Kind()]
	if !ok {
		return
	}
	name := x.text(x.field(t, "name"))
	body := x.field(t, "body")
	if name == "" || body == nil {
		return // a reference to a type, not its definition
	}
	x.add(t, name, kind, container)
	if x.lang == langCPP && kind != "enum" {
		was := x.inClass
		x.inClass = true
		x.block(body, joinName(container, name), depth+1)
		x.inClass = was
	}
}

func hasFunctionDeclarator(d *tsNode) bool {
	for d != nil {
		switch d.Kind() {
		case "function_declarator":
			return true
		case "identifier", "field_identifier", "qualified_identifier":
			return false
		}
		d = d.ChildByFieldName("declarator")
	}
	return false
}

// declName follows a C declarator to its name; qual reports a qualified
// (Class::method) name.
func (x *extractor) declName(d *tsNode) (name string, qual bool) {
	for i := 0; d != nil && i < 16; i++ {
		switch d.Kind() {
		case "identifier", "field_identifier", "type_identifier", "operator_name", "destructor_name", "primitive_type":
			return x.text(d), false
		case "qualified_identifier":
			return strings.ReplaceAll(x.text(d), "::", "."), true
		}
		next := d.ChildByFieldName("declarator")
		if next == nil {
			// parenthesized_declarator and friends hold it as a child.
			for _, c := range x.children(d) {
				next = &c
				break
			}
		}
		d = next
	}
	return "", false
}

func joinName(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "." + b
}

func isUpper(s string) bool {
	has := false
	for _, r := range s {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsUpper(r) {
			has = true
		}
	}
	return has
}
