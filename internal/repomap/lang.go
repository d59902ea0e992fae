package repomap

import (
	"path"
	"strings"
)

// lang is one supported language: its grammar in parsers.wasm (id, the
// index of glue.c's langs) and how its top-level symbols are found.
type lang struct {
	name string
	id   int
}

var (
	langGo     = &lang{name: "go", id: 0}
	langJS     = &lang{name: "javascript", id: 1}
	langTS     = &lang{name: "typescript", id: 2}
	langTSX    = &lang{name: "tsx", id: 3}
	langPython = &lang{name: "python", id: 4}
	langRust   = &lang{name: "rust", id: 5}
	langLua    = &lang{name: "lua", id: 6}
	langJava   = &lang{name: "java", id: 7}
	langC      = &lang{name: "c", id: 8}
	langCPP    = &lang{name: "cpp", id: 9}
)

// allLangs is every language, in glue.c's order.
var allLangs = []*lang{langGo, langJS, langTS, langTSX, langPython, langRust, langLua, langJava, langC, langCPP}

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
	for _, l := range allLangs {
		if !seen[l.name] {
			seen[l.name] = true
			out = append(out, l.name)
		}
	}
	return out
}
