package openapitest

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/routers"
)

// prefix is the path of every server of the document: paths in the document
// are relative to it, request paths given to Check include it.
const prefix = "/v1"

// unroutedResponses names the components.responses that answer a request
// matching no path of the document, by status.
var unroutedResponses = map[int]string{
	http.StatusBadRequest:          "RoutingBadRequest",
	http.StatusNotFound:            "RouteNotFound",
	http.StatusMethodNotAllowed:    "MethodNotAllowed",
	http.StatusInternalServerError: "InternalError",
	http.StatusServiceUnavailable:  "ServiceUnavailable",
}

// wrongMethodStatuses are the statuses a documented path may answer to a
// method the document does not list for it: 405, and the faults that can
// strike before routing.
var wrongMethodStatuses = map[int]bool{
	http.StatusMethodNotAllowed:    true,
	http.StatusInternalServerError: true,
	http.StatusServiceUnavailable:  true,
}

// Checker validates responses against one loaded document. It is safe for
// concurrent use; create it with Load.
type Checker struct {
	router routers.Router
	// ops holds the compiled operations by method and path template
	// ("GET /properties/{propertyId}").
	ops map[string]*operation
	// unrouted answers requests that match no path of the document.
	unrouted *operation
}

// Check validates one response to method and path, the request path as sent:
// with the /v1 prefix, escaped, optionally with a query string
// ("/v1/properties?page=2").
//
// A path matching an operation is checked against it: a documented status,
// the documented media type, every documented header matching its schema
// (sent once; the required ones present), the body JSON matching the schema
// (not for HEAD: HTTP sends none). A documented path asked with another
// method must answer 405 (or 500/503), checked against one of its operations'
// response of that status; any other path against the components of
// requests matching no route (unroutedResponses; a 405 only to a method
// other than GET). Beyond the document, crossCheck asserts what OpenAPI
// cannot express. Paths route as the edge routes them (operation).
func (c *Checker) Check(method, path string, status int, header http.Header, body []byte) error {
	if err := c.check(method, path, status, header, body); err != nil {
		return fmt.Errorf("openapitest: %s %s -> %d: %w", method, path, status, err)
	}
	return nil
}

// CheckResponse is Check for a request and its response; body is the
// response body already read (res.Body is not touched).
func (c *Checker) CheckResponse(req *http.Request, res *http.Response, body []byte) error {
	if req == nil || req.URL == nil || res == nil {
		return errors.New("openapitest: nil request or response")
	}
	path := req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	return c.Check(req.Method, path, res.StatusCode, res.Header, body)
}

func (c *Checker) check(method, path string, status int, header http.Header, body []byte) error {
	escapedPath, _, _ := strings.Cut(path, "?")
	op, err := c.operation(method, escapedPath)
	switch {
	case err == nil:
	case errors.Is(err, routers.ErrMethodNotAllowed):
		if !wrongMethodStatuses[status] {
			return fmt.Errorf("a documented path asked with %s must answer 405 (or 500, 503)", method)
		}
		if op, err = c.anyOperation(escapedPath); err != nil {
			return fmt.Errorf("no operation at a documented path: %w", err)
		}
	case errors.Is(err, routers.ErrPathNotFound):
		if status == http.StatusMethodNotAllowed && method == http.MethodGet {
			return errors.New("405 to a GET of a path that matches no route")
		}
		op = c.unrouted
	default:
		return err
	}
	res := op.responses[status]
	if res == nil {
		return fmt.Errorf("status %d is not documented for %s", status, op.name)
	}
	if err := res.checkHeaders(header); err != nil {
		return fmt.Errorf("%s: %w", res.name, err)
	}
	if method == http.MethodHead {
		return nil
	}
	if err := res.checkBody(body); err != nil {
		return fmt.Errorf("%s: %w", res.name, err)
	}
	return crossCheck(escapedPath, header, body)
}

// anyOperation is an operation of the documented path escapedPath, for
// the 405 (or 500, 503) a method it does not serve gets: every operation
// of a path answers those alike.
func (c *Checker) anyOperation(escapedPath string) (*operation, error) {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if op, err := c.operation(m, escapedPath); err == nil {
			return op, nil
		}
	}
	return nil, routers.ErrMethodNotAllowed
}

// operation finds the compiled operation of escapedPath (with the prefix).
// It routes as the edge does (docs/contract.md section 10): percent-encoded
// unreserved characters are decoded first ("/v1/propert%69es" is the list),
// and no other escape ever becomes a separator ("%2F" stays inside its
// segment).
func (c *Checker) operation(method, escapedPath string) (*operation, error) {
	rest, ok := strings.CutPrefix(normalizePath(escapedPath), prefix)
	if !ok || !strings.HasPrefix(rest, "/") {
		return nil, routers.ErrPathNotFound
	}
	u, err := url.Parse(rest)
	if err != nil || u.Path == "" || u.Host != "" || u.Scheme != "" {
		return nil, routers.ErrPathNotFound
	}
	route, _, err := c.router.FindRoute(&http.Request{Method: method, URL: u, Header: http.Header{}})
	if err != nil {
		return nil, err
	}
	op := c.ops[method+" "+route.Path]
	if op == nil {
		return nil, fmt.Errorf("operation %s %s was not compiled", method, route.Path)
	}
	return op, nil
}
