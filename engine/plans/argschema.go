package plans

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentd/agentd/engine/tools"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var schemaPrinter = message.NewPrinter(language.English)

// checkToolArgs checks a tool step's tool name and its args against the
// tool's JSON Schema. Strings holding references stand for values not known
// yet: a whole reference ("$read", "${a.files}") may have any type, so no
// error about that value is reported; a string with references inside text
// is a string, so only a type error is.
func (v *validator) checkToolArgs(s *Step) {
	if v.reg == nil {
		return
	}
	t, ok := v.reg.Get(s.Tool)
	if !ok {
		v.add(s.ID, "tool", "unknown tool %q%s", s.Tool, v.didYouMeanTool(s.Tool))
		return
	}
	sch, ok := v.schemas[s.Tool]
	var err error
	if !ok {
		sch, err = compileToolSchema(s.Tool, t.Schema())
		v.schemas[s.Tool], v.schemaErrs[s.Tool] = sch, err
	} else {
		err = v.schemaErrs[s.Tool]
	}
	if err != nil {
		v.add(s.ID, "tool", "tool %q has an unusable schema (an agentd bug, please report it): %v", s.Tool, err)
		return
	}
	if sch == nil {
		return
	}
	args := v.args(s)
	if args == nil {
		if len(bytes.TrimSpace(s.Args)) > 0 && string(s.Args) != "null" {
			v.add(s.ID, "args", "args are not valid JSON")
			return
		}
		args = map[string]any{}
	}
	if c, ok := t.(tools.ArgsChecker); ok && len(s.Args) > 0 {
		for _, pr := range c.CheckArgs(s.Args) {
			v.add(s.ID, "args."+pr.Field, "%s", pr.Message)
		}
	}
	verr := sch.Validate(args)
	if verr == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		v.add(s.ID, "args", "args do not match the schema of %q: %v", s.Tool, verr)
		return
	}
	for _, leaf := range mergeTypeErrors(keptErrors(ve, args)) {
		v.addSchemaProblem(s.ID, s.Tool, args, leaf)
	}
}

func compileToolSchema(name string, schema []byte) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "agentd:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// keptErrors returns the leaf errors of e that are not explained by
// references standing for unknown values.
func keptErrors(e *jsonschema.ValidationError, args any) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		if refExcused(e, args) {
			return nil
		}
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		// The alternative passes if any branch fails only because of references.
		for _, c := range e.Causes {
			k := keptErrors(c, args)
			if len(k) == 0 {
				return nil
			}
			out = append(out, k...)
		}
		return out
	}
	for _, c := range e.Causes {
		out = append(out, keptErrors(c, args)...)
	}
	return out
}

// refExcused reports whether the value e is about is a string holding a
// reference, so that the error may not hold once it is resolved.
func refExcused(e *jsonschema.ValidationError, args any) bool {
	val, ok := argValueAt(args, e.InstanceLocation)
	if !ok {
		return false
	}
	str, ok := val.(string)
	if !ok || !strings.Contains(str, "$") {
		return false
	}
	t, err := parseTemplate(str)
	if err != nil || !t.hasRefs() {
		return false
	}
	if t.whole {
		return true
	}
	_, isType := e.ErrorKind.(*kind.Type)
	return !isType
}

func argValueAt(v any, loc []string) (any, bool) {
	for _, tok := range loc {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// fieldPath renders an instance location as args.edits[0].oldText.
func argFieldPath(args any, loc []string) string {
	var b strings.Builder
	b.WriteString("args")
	v := args
	for _, tok := range loc {
		if arr, ok := v.([]any); ok {
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(arr) {
				v = arr[i]
			} else {
				v = nil
			}
			continue
		}
		b.WriteString(fieldSep(tok))
		if m, ok := v.(map[string]any); ok {
			v = m[tok]
		} else {
			v = nil
		}
	}
	return b.String()
}

// mergeTypeErrors folds type errors about the same value (the branches of
// an anyOf) into one: "must be string or null".
func mergeTypeErrors(errs []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	var out []*jsonschema.ValidationError
	seen := map[string]*kind.Type{}
	for _, e := range errs {
		k, ok := e.ErrorKind.(*kind.Type)
		if !ok {
			out = append(out, e)
			continue
		}
		loc := strings.Join(e.InstanceLocation, "\x00")
		if prev, dup := seen[loc]; dup {
			for _, w := range k.Want {
				if !slices.Contains(prev.Want, w) {
					prev.Want = append(prev.Want, w)
				}
			}
			continue
		}
		merged := &kind.Type{Got: k.Got, Want: slices.Clone(k.Want)}
		seen[loc] = merged
		out = append(out, &jsonschema.ValidationError{InstanceLocation: e.InstanceLocation, ErrorKind: merged})
	}
	return out
}

func (v *validator) addSchemaProblem(step, tool string, args any, e *jsonschema.ValidationError) {
	field := argFieldPath(args, e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			v.add(step, field+fieldSep(m), "missing required field %q", m)
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			if hint := v.argNameHint(tool, e.SchemaURL, p); strings.HasPrefix(hint, ": did you mean") {
				v.add(step, field+fieldSep(p), "unknown field %q in args%s", p, hint)
			} else {
				v.add(step, field+fieldSep(p), "unknown field %q in args: remove it%s (see the tool's schema in docs/plans.md)", p, hint)
			}
		}
		return
	case *kind.Type:
		v.add(step, field, "must be %s, not %s", strings.Join(k.Want, " or "), k.Got)
		return
	}
	v.add(step, field, "does not match the schema of %s: %s", tool, e.ErrorKind.LocalizedString(schemaPrinter))
}
