package repomap

import (
	"path"
	"strings"
	"sync"

	tslua "github.com/tree-sitter-grammars/tree-sitter-lua/bindings/go"
	sitter "github.com/tree-sitter/go-tree-sitter"
	tsc "github.com/tree-sitter/tree-sitter-c/bindings/go"
	tscpp "github.com/tree-sitter/tree-sitter-cpp/bindings/go"
	tsgo "github.com/tree-sitter/tree-sitter-go/bindings/go"
	tsjava "github.com/tree-sitter/tree-sitter-java/bindings/go"
	tsjs "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
	tspy "github.com/tree-sitter/tree-sitter-python/bindings/go"
	tsrust "github.com/tree-sitter/tree-sitter-rust/bindings/go"
	tsts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
)

// lang is one supported language: its grammar and how its top-level
// symbols are found.
type lang struct {
	name string
	load func() *sitter.Language
	once sync.Once
	ts   *sitter.Language
}

func (l *lang) language() *sitter.Language {
	l.once.Do(func() { l.ts = l.load() })
	return l.ts
}

var (
	langGo     = &lang{name: "go", load: func() *sitter.Language { return sitter.NewLanguage(tsgo.Language()) }}
	langJS     = &lang{name: "javascript", load: func() *sitter.Language { return sitter.NewLanguage(tsjs.Language()) }}
	langTS     = &lang{name: "typescript", load: func() *sitter.Language { return sitter.NewLanguage(tsts.LanguageTypescript()) }}
	langTSX    = &lang{name: "tsx", load: func() *sitter.Language { return sitter.NewLanguage(tsts.LanguageTSX()) }}
	langPython = &lang{name: "python", load: func() *sitter.Language { return sitter.NewLanguage(tspy.Language()) }}
	langRust   = &lang{name: "rust", load: func() *sitter.Language { return sitter.NewLanguage(tsrust.Language()) }}
	langLua    = &lang{name: "lua", load: func() *sitter.Language { return sitter.NewLanguage(tslua.Language()) }}
	langJava   = &lang{name: "java", load: func() *sitter.Language { return sitter.NewLanguage(tsjava.Language()) }}
	langC      = &lang{name: "c", load: func() *sitter.Language { return sitter.NewLanguage(tsc.Language()) }}
	langCPP    = &lang{name: "cpp", load: func() *sitter.Language { return sitter.NewLanguage(tscpp.Language()) }}
)

var byExt = map[string]*lang{
	".go": langGo,
	".js": langJS, ".mjs": langJS, ".cjs": langJS, ".jsx": langJS,
	".ts": langTS, ".mts": langTS, ".cts": langTS, ".tsx": langTSX,
	".py": langPython, ".pyi": langPython,
	".rs":   langRust,
	".lua":  langLua,
	".java": langJava,
	".c":    langC, ".h": langC,
	".cc": langCPP, ".cpp": langCPP, ".cxx": langCPP, ".c++": langCPP, ".hpp": langCPP, ".hh": langCPP, ".hxx": langCPP,
}

// langOf returns the language of a path by its extension, or nil.
func langOf(p string) *lang {
	return byExt[strings.ToLower(path.Ext(p))]
}

// Languages lists the supported languages' names.
func Languages() []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range []*lang{langGo, langJS, langTS, langTSX, langPython, langRust, langLua, langJava, langC, langCPP} {
		if !seen[l.name] {
			seen[l.name] = true
			out = append(out, l.name)
		}
	}
	return out
}
