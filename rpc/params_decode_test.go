package rpc

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestHandlersDecodeTheirProtocolParams holds the params of every request
// to the schema (docs/protocol.schema.json), their one definition: the
// handler of a method whose params the schema defines (not an LSP type)
// decodes them, itself or through a helper it passes params to, into that
// generated type (protocol.<Name>) and into nothing else: no anonymous or
// hand-written struct.
func TestHandlersDecodeTheirProtocolParams(t *testing.T) {
	want := schemaParams(t)
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string][]*ast.FuncDecl{} // by name: functions and methods
	fileOf := map[*ast.FuncDecl]*ast.File{}
	handlers := map[string]string{} // method -> handler name
	where := map[string]token.Pos{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				funcs[fd.Name.Name] = append(funcs[fd.Name.Name], fd)
				fileOf[fd] = f
			}
		}
		// The method tables: "agentd/x/y": {call: (*Server).handler}.
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			lit, ok := kv.Key.(*ast.BasicLit)
			cl, ok2 := kv.Value.(*ast.CompositeLit)
			if !ok || !ok2 || lit.Kind != token.STRING {
				return true
			}
			m, _ := strconv.Unquote(lit.Value)
			for _, e := range cl.Elts {
				if f, ok := e.(*ast.KeyValueExpr); ok && isIdent(f.Key, "call") {
					if sel, ok := f.Value.(*ast.SelectorExpr); ok {
						handlers[m], where[m] = sel.Sel.Name, lit.Pos()
					}
				}
			}
			return true
		})
	}
	methods := make([]string, 0, len(want))
	for m := range want {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		h, ok := handlers[m]
		if !ok {
			t.Errorf("%s: no handler found in rpc's method tables", m)
			continue
		}
		decodes := 0
		seen := map[*ast.FuncDecl]bool{}
		var visit func(fd *ast.FuncDecl, param string)
		visit = func(fd *ast.FuncDecl, param string) {
			if seen[fd] {
				return
			}
			seen[fd] = true
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 || !isIdent(call.Args[0], param) {
					return true
				}
				callee := ""
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					callee = fn.Name
				case *ast.SelectorExpr:
					callee = fn.Sel.Name
				}
				if callee != "decode" {
					// A helper params is passed to: follow it.
					for _, next := range funcs[callee] {
						if p := firstParam(next); p != "" {
							visit(next, p)
						}
					}
					return true
				}
				decodes++
				pos := fset.Position(call.Pos())
				typ := destType(fd, call)
				if !isProtocolRef(fileOf[fd], typ, want[m]) {
					t.Errorf("%s:%d: %s (%s) decodes its params into %s; decode into the generated protocol.%s (docs/protocol.schema.json is their one definition)",
						pos.Filename, pos.Line, m, h, exprString(typ), want[m])
				}
				return true
			})
		}
		for _, fd := range funcs[h] {
			if p := paramNamed(fd, 1); p != "" {
				visit(fd, p)
			}
		}
		if decodes == 0 {
			pos := fset.Position(where[m])
			t.Errorf("%s:%d: %s (%s) never decodes its params into protocol.%s", pos.Filename, pos.Line, m, h, want[m])
		}
	}
}

// schemaParams maps each client-to-server request whose params the schema
// defines to the name of that structure (LSP's own types are left out).
func schemaParams(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "protocol.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Requests []struct {
			Method    string `json:"method"`
			Direction string `json:"direction"`
			Params    *struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range s.Requests {
		if r.Direction == "clientToServer" && r.Params != nil && r.Params.Kind == "reference" {
			out[r.Method] = r.Params.Name
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d requests with schema params found: is the schema's layout what this test reads?", len(out))
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// paramNamed is the name of a function's i-th parameter (counting names).
func paramNamed(fd *ast.FuncDecl, i int) string {
	n := 0
	for _, f := range fd.Type.Params.List {
		for _, name := range f.Names {
			if n == i {
				return name.Name
			}
			n++
		}
	}
	return ""
}

func firstParam(fd *ast.FuncDecl) string { return paramNamed(fd, 0) }

// destType is the declared type of decode's destination (&v): v's var
// declaration or parameter in fd; nil when it cannot be found.
func destType(fd *ast.FuncDecl, call *ast.CallExpr) ast.Expr {
	if len(call.Args) < 2 {
		return nil
	}
	u, ok := call.Args[1].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return nil
	}
	v, ok := u.X.(*ast.Ident)
	if !ok {
		return nil
	}
	var typ ast.Expr
	ast.Inspect(fd, func(n ast.Node) bool {
		switch d := n.(type) {
		case *ast.ValueSpec:
			for _, name := range d.Names {
				if name.Name == v.Name {
					typ = d.Type
				}
			}
		case *ast.Field:
			for _, name := range d.Names {
				if name.Name == v.Name {
					typ = d.Type
				}
			}
		case *ast.AssignStmt:
			for i, l := range d.Lhs {
				if isIdent(l, v.Name) && d.Tok == token.DEFINE && i < len(d.Rhs) {
					if cl, ok := d.Rhs[i].(*ast.CompositeLit); ok {
						typ = cl.Type
					}
				}
			}
		}
		return true
	})
	return typ
}

// isProtocolRef says whether typ is <pkg>.name where pkg is the file's
// import of github.com/agentd/agentd/protocol.
func isProtocolRef(f *ast.File, typ ast.Expr, name string) bool {
	sel, ok := typ.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path != "github.com/agentd/agentd/protocol" {
			continue
		}
		local := "protocol"
		if imp.Name != nil {
			local = imp.Name.Name
		}
		return local == x.Name
	}
	return false
}

func exprString(e ast.Expr) string {
	switch e.(type) {
	case nil:
		return "a value whose declared type this test cannot find"
	case *ast.StructType:
		return "an anonymous struct"
	}
	return types.ExprString(e)
}
