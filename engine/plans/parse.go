package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// MaxPlanBytes bounds the size of a plan file ParsePlan accepts.
var MaxPlanBytes = 8 << 20

// ParseError is a syntax error in a plan file, with its position when known
// (Line and Col are 1-based; 0 = unknown). ParsePlan returns it inside a
// *ValidationError (errors.As finds either).
type ParseError struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("plan")
	}
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteString(":" + strconv.Itoa(e.Col))
		}
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

func parsePlan(name string, data []byte) (*Plan, error) {
	p, err := parsePlanData(name, data)
	var pe *ParseError
	if errors.As(err, &pe) {
		// The message says where too, for readers that show only messages.
		msg := pe.Msg
		switch {
		case pe.Line > 0 && pe.Col > 0:
			msg = fmt.Sprintf("line %d, column %d: %s", pe.Line, pe.Col, msg)
		case pe.Line > 0:
			msg = fmt.Sprintf("line %d: %s", pe.Line, msg)
		}
		return nil, &ValidationError{Problems: []Problem{{File: pe.File, Line: pe.Line, Col: pe.Col, Message: msg}}, cause: pe}
	}
	return p, err
}

func parsePlanData(name string, data []byte) (*Plan, error) {
	if len(data) > MaxPlanBytes {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("plan is %d bytes, more than the %d accepted; split it into smaller plans", len(data), MaxPlanBytes)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	jsonData := data
	fromYAML := isYAML(name, data)
	if fromYAML {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, yamlError(name, err)
		}
		jsonData = j
	}
	v, err := decodeJSON(jsonData)
	if err != nil {
		return nil, jsonError(name, jsonData, err)
	}
	if v == nil {
		return nil, &ParseError{File: name, Msg: "plan is empty: write an object with a \"steps\" array (see docs/plans.md)"}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &ParseError{File: name, Line: 1, Msg: fmt.Sprintf("plan is %s, not an object: write {\"steps\": [...]} (see docs/plans.md)", jsonTypeName(v))}
	}
	if probs, paths := checkShape(name, obj); len(probs) > 0 {
		if !fromYAML { // positions in the converted JSON mean nothing in the YAML file
			locate(jsonData, probs, paths)
		}
		return nil, &ValidationError{Problems: probs}
	}
	var p Plan
	if err := json.Unmarshal(jsonData, &p); err != nil {
		// checkShape should have caught every mismatch; keep the error useful anyway.
		return nil, jsonError(name, jsonData, err)
	}
	p.Source = name
	if p.Version == 0 {
		p.Version = 1
	}
	for _, s := range p.Steps {
		if s == nil {
			continue
		}
		if len(s.Args) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, s.Args) == nil {
				s.Args = b.Bytes()
			}
			if string(s.Args) == "null" {
				s.Args = nil
			}
		}
	}
	return &p, nil
}

func isYAML(name string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] != '{' && t[0] != '['
}

var yamlLine = regexp.MustCompile(`line (\d+)(?::|,)?`)

func yamlError(name string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimSpace(strings.Replace(msg, m[0], "", 1))
	}
	return &ParseError{File: name, Line: line, Msg: "YAML syntax: " + msg + "; fix the indentation or quoting there"}
}

func jsonError(name string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		l, c := planLineCol(data, se.Offset-1) // Offset is just after the bad byte
		return &ParseError{File: name, Line: l, Col: c, Msg: "JSON syntax: " + se.Error() + "; look for a missing comma, quote or bracket there"}
	case errors.As(err, &te):
		l, c := planLineCol(data, te.Offset)
		return &ParseError{File: name, Line: l, Col: c, Msg: fmt.Sprintf("field %s: %s is not a %s", te.Field, te.Value, te.Type)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		l, c := planLineCol(data, int64(len(data)))
		return &ParseError{File: name, Line: l, Col: c, Msg: "JSON ends too early: close every { and [ and every string"}
	}
	return &ParseError{File: name, Msg: err.Error()}
}

// lineCol returns the 1-based line and column (in bytes) of the byte at
// index off; off == len(data) is the position just after the end.
func planLineCol(data []byte, off int64) (int, int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// shape describes the JSON type of a field.
type shape int

const (
	shString shape = iota
	shInt
	shBool
	shObject     // any object (args)
	shStringList // array of strings
	shTime       // RFC 3339 string
	shStruct     // object with its own fields (sub)
	shStructList // array of objects with fields (sub)
)

type fieldSpec struct {
	shape shape
	sub   map[string]fieldSpec
}

var (
	checkSpec  = map[string]fieldSpec{"expr": {shape: shString}, "message": {shape: shString}}
	branchSpec = map[string]fieldSpec{"when": {shape: shString}, "steps": {shape: shStringList}}
	retrySpec  = map[string]fieldSpec{"max": {shape: shInt}, "delay": {shape: shString}, "maxDelay": {shape: shString}}
	stepSpec   = map[string]fieldSpec{
		"id": {shape: shString}, "description": {shape: shString}, "kind": {shape: shString},
		"tool": {shape: shString}, "args": {shape: shObject},
		"prompt": {shape: shString}, "tools": {shape: shStringList}, "maxIterations": {shape: shInt},
		"model":  {shape: shString},
		"checks": {shape: shStructList, sub: checkSpec}, "question": {shape: shString},
		"options": {shape: shStringList}, "branches": {shape: shStructList, sub: branchSpec},
		"dependsOn": {shape: shStringList}, "when": {shape: shString}, "critical": {shape: shBool},
		"risk": {shape: shString}, "approval": {shape: shString},
		"retry": {shape: shStruct, sub: retrySpec}, "timeout": {shape: shString},
		"reversible": {shape: shBool}, "skip": {shape: shBool},
	}
	historySpec = map[string]fieldSpec{
		"version": {shape: shInt}, "time": {shape: shTime}, "source": {shape: shString},
		"reason": {shape: shString}, "action": {shape: shString}, "stepIds": {shape: shStringList},
	}
	planSpec = map[string]fieldSpec{
		"$schema": {shape: shString}, "id": {shape: shString}, "version": {shape: shInt},
		"title": {shape: shString}, "request": {shape: shString},
		"steps":     {shape: shStructList, sub: stepSpec},
		"createdAt": {shape: shTime}, "history": {shape: shStructList, sub: historySpec},
	}
)

// checkShape reports every unknown field and every field of the wrong JSON
// type, naming the step and the field.
//
// paths holds each problem's field as a path from the plan's root
// ("steps[2].retry.delay"), to find its position in the file.
func checkShape(file string, plan map[string]any) (probs []Problem, paths []string) {
	if _, ok := plan["steps"]; !ok {
		probs = append(probs, Problem{File: file, Field: "steps", Message: "the plan has no \"steps\": add an array of steps (see docs/plans.md)"})
		paths = append(paths, "")
	}
	var walk func(step, prefix, abs string, obj map[string]any, spec map[string]fieldSpec)
	walk = func(step, prefix, abs string, obj map[string]any, spec map[string]fieldSpec) {
		add := func(step, field, format string, a ...any) {
			probs = append(probs, Problem{File: file, StepID: step, Field: field, Message: fmt.Sprintf(format, a...)})
			paths = append(paths, abs+strings.TrimPrefix(field, prefix))
		}
		for _, k := range sortedKeys(obj) {
			v := obj[k]
			field := prefix + k
			fs, ok := spec[k]
			if !ok {
				if s := closestName(k, specKeys(spec)); s != "" {
					add(step, field, "unknown field %q: did you mean %q?", k, s)
				} else {
					add(step, field, "unknown field %q: remove it (known fields: %s)", k, strings.Join(specKeys(spec), ", "))
				}
				continue
			}
			if v == nil {
				continue // null = absent
			}
			switch fs.shape {
			case shString:
				if _, ok := v.(string); !ok {
					add(step, field, "%s must be a string, not %s", k, jsonTypeName(v))
				}
			case shTime:
				s, ok := v.(string)
				if !ok {
					add(step, field, "%s must be an RFC 3339 time string, not %s", k, jsonTypeName(v))
				} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
					add(step, field, "%s %q is not an RFC 3339 time such as \"2026-01-02T15:04:05Z\"", k, s)
				}
			case shInt:
				n, ok := v.(json.Number)
				if !ok {
					add(step, field, "%s must be an integer, not %s", k, jsonTypeName(v))
					break
				}
				if i, err := strconv.ParseInt(n.String(), 10, 64); err != nil || i > math.MaxInt32 || i < math.MinInt32 {
					add(step, field, "%s must be an integer, not %s", k, n)
				}
			case shBool:
				if _, ok := v.(bool); !ok {
					add(step, field, "%s must be true or false, not %s", k, jsonTypeName(v))
				}
			case shObject:
				if _, ok := v.(map[string]any); !ok {
					add(step, field, "%s must be an object, not %s", k, jsonTypeName(v))
				}
			case shStringList:
				arr, ok := v.([]any)
				if !ok {
					if s, isStr := v.(string); isStr {
						add(step, field, "%s must be an array of strings: write [%q]", k, s)
					} else {
						add(step, field, "%s must be an array of strings, not %s", k, jsonTypeName(v))
					}
					break
				}
				for i, e := range arr {
					if _, ok := e.(string); !ok {
						add(step, field+"["+strconv.Itoa(i)+"]", "%s[%d] must be a string, not %s", k, i, jsonTypeName(e))
					}
				}
			case shStruct:
				o, ok := v.(map[string]any)
				if !ok {
					add(step, field, "%s must be an object, not %s", k, jsonTypeName(v))
					break
				}
				walk(step, field+".", abs+k+".", o, fs.sub)
			case shStructList:
				arr, ok := v.([]any)
				if !ok {
					add(step, field, "%s must be an array of objects, not %s", k, jsonTypeName(v))
					break
				}
				for i, e := range arr {
					o, ok := e.(map[string]any)
					if !ok {
						add(step, field+"["+strconv.Itoa(i)+"]", "%s[%d] must be an object, not %s", k, i, jsonTypeName(e))
						continue
					}
					if k == "steps" && prefix == "" {
						id, _ := o["id"].(string)
						sub := ""
						if id == "" {
							sub = "steps[" + strconv.Itoa(i) + "]."
						}
						walk(id, sub, "steps["+strconv.Itoa(i)+"].", o, fs.sub)
						continue
					}
					walk(step, field+"["+strconv.Itoa(i)+"].", abs+k+"["+strconv.Itoa(i)+"].", o, fs.sub)
				}
			}
		}
	}
	walk("", "", "", plan, planSpec)
	return probs, paths
}

// locate sets Line and Col of problems from their paths in JSON data: the
// start of the field's key, or of the array element.
func locate(data []byte, probs []Problem, paths []string) {
	offs := map[string]int64{}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	// next returns the offset where the next token starts.
	next := func() int64 {
		off := d.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		return off
	}
	var value func(path string) error
	value = func(path string) error {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for d.More() {
				start := next()
				kt, err := d.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				p := key
				if path != "" {
					p = path + "." + key
				}
				offs[p] = start
				if err := value(p); err != nil {
					return err
				}
			}
			_, err = d.Token()
		case json.Delim('['):
			for i := 0; d.More(); i++ {
				p := path + "[" + strconv.Itoa(i) + "]"
				offs[p] = next()
				if err := value(p); err != nil {
					return err
				}
			}
			_, err = d.Token()
		}
		return err
	}
	if value("") != nil {
		return
	}
	for i, p := range paths {
		if off, ok := offs[p]; ok && p != "" {
			probs[i].Line, probs[i].Col = planLineCol(data, off)
		}
	}
}

func specKeys(spec map[string]fieldSpec) []string {
	ks := make([]string, 0, len(spec))
	for k := range spec {
		if k != "$schema" {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}
