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

// Schema resource ids (the "$id" of each file).
const (
	listSchemaID  = "urn:partner-edge:pms:list"
	hotelSchemaID = "urn:partner-edge:pms:hotel"
)

// schemas are the compiled list page and hotel record schemas.
type schemas struct {
	list, hotel *jsonschema.Schema
}

// compileSchemas compiles the embedded files. An error is a bug of the
// repository (a broken schema file), found by any test.
func compileSchemas() (*schemas, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, name := range []string{"schema/hotel.json", "schema/list.json"} {
		b, err := schemaFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("pmscheck: %s: %w", name, err)
		}
		id := hotelSchemaID
		if strings.HasSuffix(name, "list.json") {
			id = listSchemaID
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("pmscheck: %s: %w", name, err)
		}
	}
	list, err := c.Compile(listSchemaID)
	if err != nil {
		return nil, fmt.Errorf("pmscheck: list schema: %w", err)
	}
	hotel, err := c.Compile(hotelSchemaID)
	if err != nil {
		return nil, fmt.Errorf("pmscheck: hotel schema: %w", err)
	}
	return &schemas{list: list, hotel: hotel}, nil
}

// schemaProblem is one leaf of a failed validation: the field it is about
// (the last name of the instance location, or the missing property) and
// what is wrong with it.
type schemaProblem struct {
	path    []string // instance location of the value (of the object, for a missing field)
	field   string
	message string
}

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
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				out = append(out, schemaProblem{path: e.InstanceLocation, field: m, message: "missing required field"})
			}
		case *kind.Type:
			out = append(out, schemaProblem{path: e.InstanceLocation, field: last(e.InstanceLocation),
				message: fmt.Sprintf("type %s, want %s", k.Got, strings.Join(k.Want, " or "))})
		default:
			out = append(out, schemaProblem{path: e.InstanceLocation, field: last(e.InstanceLocation),
				message: fmt.Sprint(e.ErrorKind)})
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b schemaProblem) int { return comparePaths(a.path, b.path) })
	return out
}

func last(p []string) string {
	if len(p) == 0 {
		return ""
	}
	return p[len(p)-1]
}

// comparePaths orders instance locations, array indexes by number.
func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, errx := strconv.Atoi(a[i])
		y, erry := strconv.Atoi(b[i])
		if errx == nil && erry == nil {
			if c := cmp.Compare(x, y); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
