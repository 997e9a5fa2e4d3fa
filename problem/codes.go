package problem

import "net/http"

// Code is a stable, machine-readable error code of the public contract.
// Partners branch on it; it never changes once published.
type Code string

// The codes of v1 (docs/contract.md section 7).
const (
	MalformedQueryString  Code = "MALFORMED_QUERY_STRING"
	UnknownQueryParameter Code = "UNKNOWN_QUERY_PARAMETER"
	InvalidQueryParameter Code = "INVALID_QUERY_PARAMETER"
	InvalidPathParameter  Code = "INVALID_PATH_PARAMETER"
	TrailingSlash         Code = "TRAILING_SLASH"
	InvalidPathCasing     Code = "INVALID_PATH_CASING"
	MissingRequiredHeader Code = "MISSING_REQUIRED_HEADER"
	InvalidHeader         Code = "INVALID_HEADER"
	UnexpectedRequestBody Code = "UNEXPECTED_REQUEST_BODY"
	MissingAuthHeader     Code = "MISSING_AUTH_HEADER"
	InvalidAuthHeader     Code = "INVALID_AUTH_HEADER"
	InvalidAPIKey         Code = "INVALID_API_KEY"
	APIKeyExpired         Code = "API_KEY_EXPIRED"
	InvalidAccessToken    Code = "INVALID_ACCESS_TOKEN" // docs/contract.md section 12
	AccessTokenExpired    Code = "ACCESS_TOKEN_EXPIRED" // docs/contract.md section 12
	APIKeySuspended       Code = "API_KEY_SUSPENDED"
	BrandAccessDenied     Code = "BRAND_ACCESS_DENIED"
	InsufficientScope     Code = "INSUFFICIENT_SCOPE"
	TestModeUnavailable   Code = "TEST_MODE_UNAVAILABLE"
	PropertyAccessDenied  Code = "PROPERTY_ACCESS_DENIED"
	RouteNotFound         Code = "ROUTE_NOT_FOUND"
	PropertyNotFound      Code = "PROPERTY_NOT_FOUND"
	EventsCursorExpired   Code = "EVENTS_CURSOR_EXPIRED" // docs/contract.md section 23
	ListSnapshotExpired   Code = "LIST_SNAPSHOT_EXPIRED" // docs/contract.md section 25
	// The webhook endpoints' routes (docs/contract.md section 26).
	MalformedJSON           Code = "MALFORMED_JSON"
	UnknownBodyField        Code = "UNKNOWN_BODY_FIELD"
	WebhookEndpointNotFound Code = "WEBHOOK_ENDPOINT_NOT_FOUND"
	WebhookEndpointExists   Code = "WEBHOOK_ENDPOINT_EXISTS"
	WebhookEndpointLimit    Code = "WEBHOOK_ENDPOINT_LIMIT"
	PayloadTooLarge         Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType    Code = "UNSUPPORTED_MEDIA_TYPE"
	MethodNotAllowed        Code = "METHOD_NOT_ALLOWED"
	NotAcceptable           Code = "NOT_ACCEPTABLE"
	ValidationFailed        Code = "VALIDATION_FAILED"
	RateLimited             Code = "RATE_LIMITED"
	InternalError           Code = "INTERNAL_ERROR"
	BadGateway              Code = "BAD_GATEWAY"
	ServiceUnavailable      Code = "SERVICE_UNAVAILABLE"
	GatewayTimeout          Code = "GATEWAY_TIMEOUT"
)

// Field-error codes (docs/partner-api.md section 7.4, plus UNKNOWN_PARAMETER
// from docs/contract.md section 5 and UNKNOWN_FIELD from section 26).
const (
	FieldRequired         = "REQUIRED"
	FieldInvalidFormat    = "INVALID_FORMAT"
	FieldInvalidEnumValue = "INVALID_ENUM_VALUE"
	FieldOutOfRange       = "OUT_OF_RANGE"
	FieldTooLong          = "TOO_LONG"
	FieldUnknownParameter = "UNKNOWN_PARAMETER"
	FieldUnknownField     = "UNKNOWN_FIELD" // a request body's member the route does not take
)

// Entry is one row of the registry: what a code means and how it is answered.
type Entry struct {
	Code   Code
	Status int
	// Title is the fixed, short summary sent as the problem's title.
	Title string
	// Explanation is a paragraph for the documentation page of the code.
	Explanation string
}

// registry is the single place mapping codes to status and title.
var registry = []Entry{
	{MalformedQueryString, http.StatusBadRequest, "Malformed query string",
		"The query string could not be parsed: it holds a bad percent-encoding or a ';' separator. Encode the query with standard application/x-www-form-urlencoded rules and '&' between parameters."},
	{UnknownQueryParameter, http.StatusBadRequest, "Unknown query parameter",
		"The request named a query parameter that the endpoint does not accept. Names are case-sensitive; each entry in errors names one unknown parameter and, when it looks like an allowed one, suggests the right spelling."},
	{InvalidQueryParameter, http.StatusBadRequest, "Invalid query parameter",
		"A query parameter value is not of the expected format (for example not a plain decimal integer), or a parameter was given more than once. Each entry in errors names one such parameter."},
	{InvalidPathParameter, http.StatusBadRequest, "Invalid path parameter",
		"A path parameter is not of the expected format. Property ids are UUIDs in the 8-4-4-4-12 hexadecimal form."},
	{TrailingSlash, http.StatusBadRequest, "Trailing slash not allowed",
		"The path is a known route with a trailing slash added. The API does not redirect: call the canonical path named in detail."},
	{InvalidPathCasing, http.StatusBadRequest, "Invalid path casing",
		"The path matches a known route only when case is ignored. Paths are case-sensitive: call the canonical path named in detail."},
	{MissingRequiredHeader, http.StatusBadRequest, "Missing required header",
		"A required request header is missing or empty. Authenticated endpoints require a User-Agent header that identifies the calling software."},
	{InvalidHeader, http.StatusBadRequest, "Invalid header",
		"A request header has an invalid value: User-Agent must be 3 to 255 printable ASCII characters and sent once; Svc-Correlation-Id must be 1 to 128 characters of A-Z, a-z, 0-9 and . _ = + / -."},
	{UnexpectedRequestBody, http.StatusBadRequest, "Unexpected request body",
		"The request declared a body (Content-Length greater than zero or Transfer-Encoding), but the endpoint takes none (every GET and DELETE, and enabling a webhook endpoint). Send the request without a body."},
	{MissingAuthHeader, http.StatusUnauthorized, "Missing authorization header",
		"The request carried no Authorization header. Send 'Authorization: Bearer <API key>'."},
	{InvalidAuthHeader, http.StatusUnauthorized, "Invalid authorization header",
		"The Authorization header is not of the form 'Bearer <token>': another scheme, an empty token, or the header sent more than once."},
	{InvalidAPIKey, http.StatusUnauthorized, "Invalid API key",
		"The API key is malformed or unknown. Keys start with svc_live_ or svc_test_ followed by at least 24 letters and digits."},
	{APIKeyExpired, http.StatusUnauthorized, "API key expired",
		"The API key has passed its expiry time. Ask for a new key."},
	{InvalidAccessToken, http.StatusUnauthorized, "Invalid access token",
		"The OAuth 2.0 access token is malformed, badly signed, issued by another authorization server or for another audience, or belongs to a client this deployment does not know. Get a new token with the client credentials grant for this API's audience."},
	{AccessTokenExpired, http.StatusUnauthorized, "Access token expired",
		"The OAuth 2.0 access token has passed its expiry time (exp). Get a new token from the authorization server and retry."},
	{APIKeySuspended, http.StatusForbidden, "API key suspended",
		"The API key is valid but suspended. Contact partner support."},
	{BrandAccessDenied, http.StatusForbidden, "Brand access denied",
		"The API key belongs to another brand than the one this host serves. Use the host of the key's brand."},
	{InsufficientScope, http.StatusForbidden, "Insufficient scope",
		"The API key lacks the scope this endpoint needs: properties:read for every endpoint, and webhooks:manage besides for the webhook endpoints."},
	{TestModeUnavailable, http.StatusForbidden, "Test mode unavailable",
		"A test-mode key (svc_test_) was used, but this deployment has no sandbox. Use a live key or the sandbox deployment."},
	{PropertyAccessDenied, http.StatusForbidden, "Property access denied",
		"The API key is not authorised for the property named in Svc-Property-Id. Used on property-scoped routes only."},
	{RouteNotFound, http.StatusNotFound, "Route not found",
		"No endpoint exists at this path. All endpoints live under /v1/."},
	{PropertyNotFound, http.StatusNotFound, "Property not found",
		"No property with this id is available to the API key: it does not exist, belongs to another brand, or the key is not granted it."},
	{EventsCursorExpired, http.StatusGone, "Events cursor expired",
		"The after cursor is older than the events the API keeps (a week by default, and a bounded number): events after it may be gone. List the properties again and follow GET /v1/events from the list's meta.events.next. Enabling a webhook endpoint answers it too when the events after the endpoint's position are gone: list the properties again and enable the endpoint once more; delivery then starts from now."},
	{ListSnapshotExpired, http.StatusGone, "List snapshot expired",
		"The asOf cursor names a snapshot of the list the API no longer holds (it keeps one for 15 minutes by default after a newer one replaced it). List the properties again from page 1 without asOf and pin the other pages to the new meta.events.next."},
	{MalformedJSON, http.StatusBadRequest, "Malformed JSON",
		"The request body is not one JSON object in UTF-8: it does not parse, has data after the object, or names a member twice. Send a single JSON object."},
	{UnknownBodyField, http.StatusBadRequest, "Unknown body field",
		"The request body holds a member the endpoint does not take. Names are case-sensitive; each entry in errors names one unknown member and, when it is another casing of a known one, names the right spelling."},
	{WebhookEndpointNotFound, http.StatusNotFound, "Webhook endpoint not found",
		"No webhook endpoint with this id belongs to the API key: it does not exist, was deleted, or was created with another key."},
	{WebhookEndpointExists, http.StatusConflict, "Webhook endpoint exists",
		"The API key already has a webhook endpoint with this url. Use it, or delete it first."},
	{WebhookEndpointLimit, http.StatusConflict, "Webhook endpoint limit reached",
		"The API key has the most webhook endpoints it may have (10). Delete one before creating another."},
	{PayloadTooLarge, http.StatusRequestEntityTooLarge, "Payload too large",
		"The request body is larger than 16 KiB, the most any endpoint takes. The body was not read past the limit."},
	{UnsupportedMediaType, http.StatusUnsupportedMediaType, "Unsupported media type",
		"The request body's Content-Type is not application/json (a charset parameter of utf-8 is allowed). Send the body as JSON with Content-Type: application/json."},
	{MethodNotAllowed, http.StatusMethodNotAllowed, "Method not allowed",
		"The endpoint exists but does not support this HTTP method. The Allow header lists the supported methods."},
	{NotAcceptable, http.StatusNotAcceptable, "Not acceptable",
		"The Accept header excludes application/json, the only type the API produces. Send Accept: application/json or omit the header."},
	{ValidationFailed, http.StatusUnprocessableEntity, "Validation failed",
		"The request is well formed but holds values out of their allowed range. Each entry in errors names one invalid field."},
	{RateLimited, http.StatusTooManyRequests, "Rate limit exceeded",
		"The API key has used its request quota for the current window. Retry after the number of seconds in Retry-After."},
	{InternalError, http.StatusInternalServerError, "Internal error",
		"An unexpected fault occurred in the API. It has been logged; retry later and quote the requestId when contacting support."},
	{BadGateway, http.StatusBadGateway, "Bad gateway",
		"A system behind the API failed or gave an invalid answer. Retry later and quote the requestId when contacting support."},
	{ServiceUnavailable, http.StatusServiceUnavailable, "Service unavailable",
		"The API is temporarily unable to serve the request. Retry after the number of seconds in Retry-After."},
	{GatewayTimeout, http.StatusGatewayTimeout, "Gateway timeout",
		"A system behind the API did not answer in time. Retry later."},
}

var byCode = func() map[Code]Entry {
	m := make(map[Code]Entry, len(registry))
	for _, e := range registry {
		m[e.Code] = e
	}
	return m
}()

// Lookup returns the registry entry of c. An unknown code yields the entry
// of INTERNAL_ERROR, so a typo can never produce an undocumented answer.
func Lookup(c Code) Entry {
	if e, ok := byCode[c]; ok {
		return e
	}
	return byCode[InternalError]
}

// Known reports whether c is a registered code.
func Known(c Code) bool { _, ok := byCode[c]; return ok }

// All returns every registered entry, in the order of docs/contract.md section 7.
func All() []Entry { return append([]Entry(nil), registry...) }
