package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// operation is one compiled operation: its documented responses by status.
type operation struct {
	name      string
	responses map[int]*docResponse
}

// docResponse is one compiled response of the document.
type docResponse struct {
	name    string // its location in the document
	headers []header
	// mediaType is the documented Content-Type; empty when the response
	// documents no content.
	mediaType string
	body      *jsonschema.Schema
}

// header is one compiled response header.
type header struct {
	name     string // canonical form
	required bool
	integer  bool // decoded as an integer before validation, else a string
	schema   *jsonschema.Schema
}

// checkHeaders checks the Content-Type and every documented header.
func (r *docResponse) checkHeaders(h http.Header) error {
	if r.mediaType != "" {
		ct := h.Values("Content-Type")
		if len(ct) != 1 {
			return fmt.Errorf("Content-Type sent %d times, want once (%s)", len(ct), r.mediaType)
		}
		mt, _, err := mime.ParseMediaType(ct[0])
		if err != nil || mt != r.mediaType {
			return fmt.Errorf("Content-Type %q, want %s", ct[0], r.mediaType)
		}
	}
	var errs []error
	for _, hd := range r.headers {
		vs := h.Values(hd.name)
		switch {
		case len(vs) == 0:
			if hd.required {
				errs = append(errs, fmt.Errorf("required header %s missing", hd.name))
			}
			continue
		case len(vs) > 1:
			errs = append(errs, fmt.Errorf("header %s sent %d times", hd.name, len(vs)))
			continue
		}
		var v any = vs[0]
		if hd.integer {
			if _, err := strconv.ParseInt(vs[0], 10, 64); err != nil {
				errs = append(errs, fmt.Errorf("header %s: %q is not an integer", hd.name, vs[0]))
				continue
			}
			v = json.Number(vs[0])
		}
		if err := hd.schema.Validate(v); err != nil {
			errs = append(errs, fmt.Errorf("header %s: %q: %w", hd.name, vs[0], err))
		}
	}
	return errors.Join(errs...)
}

// checkBody checks that body is one JSON value matching the schema.
func (r *docResponse) checkBody(body []byte) error {
	if r.body == nil {
		if len(body) != 0 {
			return errors.New("body sent where none is documented")
		}
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := r.body.Validate(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}
