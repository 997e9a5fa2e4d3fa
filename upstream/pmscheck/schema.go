package pmscheck

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The JSON Schemas of the PMS's answers (docs/pms-api.md sections 2, 3
// and 5), kept beside the code that checks them.
//
//go:embed schema/*.json
var schemaFiles embed.FS

// schemas are the compiled list page and hotel record schemas.
type schemas struct {
	list, hotel *jsonschema.Schema
}

// compileSchemas compiles the embedded files, each under its "$id"
// (urn:partner-edge:pms:<name>; the list's refers to the hotel's). An
// error is a bug of the repository (a broken schema file), found by any
// test.
func compileSchemas() (*schemas, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	var out [2]*jsonschema.Schema
	for i, name := range []string{"hotel", "list"} {
		b, err := schemaFiles.ReadFile("schema/" + name + ".json")
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err == nil {
			err = c.AddResource("urn:partner-edge:pms:"+name, doc)
		}
		if err == nil {
			out[i], err = c.Compile("urn:partner-edge:pms:" + name)
		}
		if err != nil {
			return nil, fmt.Errorf("pmscheck: schema/%s.json: %w", name, err)
		}
	}
	return &schemas{hotel: out[0], list: out[1]}, nil
}

// schemaProblem is one leaf of a failed validation: the field it is about
// (the last name of the instance location, or the missing property) and
// what is wrong with it.
type schemaProblem struct {
	path    []string // instance location of the value (of the object, for a missing field)
	field   string
	message string
}

// missingField is the message of a required field missing.
const missingField = "missing required field"

// validate checks the decoded JSON value v against s and returns every
// leaf problem, in a stable order.
func validate(s *jsonschema.Schema, v any) []schemaProblem {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []schemaProblem{{message: err.Error()}}
	}
	var out []schemaProblem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) > 0 {
			return
		}
		p := schemaProblem{path: e.InstanceLocation, message: fmt.Sprint(e.ErrorKind)}
		if n := len(p.path); n > 0 {
			p.field = p.path[n-1]
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, schemaProblem{path: p.path, field: m, message: missingField})
			}
		case *kind.Type:
			p.message = fmt.Sprintf("type %s, want %s", k.Got, strings.Join(k.Want, " or "))
			out = append(out, p)
		default:
			out = append(out, p)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b schemaProblem) int { return comparePaths(a.path, b.path) })
	return out
}

// comparePaths orders instance locations, array indexes by number.
func comparePaths(a, b []string) int {
	return slices.CompareFunc(a, b, func(x, y string) int {
		nx, errx := strconv.Atoi(x)
		ny, erry := strconv.Atoi(y)
		if errx == nil && erry == nil {
			return cmp.Compare(nx, ny)
		}
		return strings.Compare(x, y)
	})
}
