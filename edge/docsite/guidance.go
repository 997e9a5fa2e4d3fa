package docsite

import (
	"net/http"
	"time"

	"github.com/partner-edge/partner-edge/problem"
)

// guide is what a code's page says beyond the registry's title and
// explanation: when the edge sends it, what the caller should do, and the
// request and problem its example body is written from (by the real
// problem.Writer, with the detail texts the edge uses).
type guide struct {
	when, do string
	path     string // the example request's path (the problem's instance); empty: /v1/properties
	example  *problem.Error
}

const (
	exampleID  = "0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c"
	challenge  = `Bearer realm="partner-api"`
	challengeT = `Bearer realm="partner-api", error="invalid_token"`
)

func fe(field, code, detail string) problem.FieldError {
	return problem.FieldError{Field: field, Code: code, Detail: detail}
}

func withHeader(pe *problem.Error, k, v string) *problem.Error {
	pe.Header = http.Header{k: {v}}
	return pe
}

// guides has one entry per code of problem's registry;
// TestEveryCodeHasAPage fails when a code lacks one (its page would say
// only what the registry says).
var guides = map[problem.Code]guide{
	problem.MalformedQueryString: {
		when:    "The query string does not parse: a '%' not followed by two hexadecimal digits, or a ';' used as a separator. Checked after authentication, headers and Accept.",
		do:      "Build query strings with your HTTP library's URL encoder and separate parameters with '&'. Do not retry unchanged.",
		example: problem.New(problem.MalformedQueryString, "The query string cannot contain ';'. Separate parameters with '&'."),
	},
	problem.UnknownQueryParameter: {
		when: "A query parameter name is not in the endpoint's allow-list: page and perPage on /v1/properties, none elsewhere. Names are case-sensitive.",
		do:   "Remove the parameter or correct its spelling; each errors entry names one unknown parameter and, for a near miss such as per_page, suggests the right name.",
		example: &problem.Error{Code: problem.UnknownQueryParameter, Detail: "The query string names parameters this endpoint does not accept.",
			Errors: []problem.FieldError{fe("per_page", problem.FieldUnknownParameter, `Unknown query parameter "per_page". Did you mean "perPage"? Names are case-sensitive.`)}},
	},
	problem.InvalidQueryParameter: {
		when: "A value is not a plain decimal integer (empty, a sign, a space, a decimal point, hexadecimal), or a parameter is given more than once.",
		do:   "Send each parameter once, as digits only. Out-of-range integers are a different error (VALIDATION_FAILED).",
		example: &problem.Error{Code: problem.InvalidQueryParameter, Detail: "One or more query parameters are malformed.",
			Errors: []problem.FieldError{fe("page", problem.FieldInvalidFormat, "page must be a plain decimal integer.")}},
	},
	problem.InvalidPathParameter: {
		when: "The propertyId in /v1/properties/{propertyId} is not a UUID (8-4-4-4-12 hexadecimal digits). Upper-case hexadecimal is accepted.",
		do:   "Use the id exactly as the list returned it. Do not retry unchanged.",
		path: "/v1/properties/12345",
		example: &problem.Error{Code: problem.InvalidPathParameter, Detail: "propertyId must be a UUID.",
			Errors: []problem.FieldError{fe("propertyId", problem.FieldInvalidFormat, "propertyId must be a UUID in the 8-4-4-4-12 hexadecimal form.")}},
	},
	problem.TrailingSlash: {
		when: "The path is a known route with a '/' added, such as /v1/properties/ or /v1/health/. The API never redirects. (/v1/ is itself a route: the API info.)",
		do:   "Call the canonical path named in detail.",
		path: "/v1/properties/", example: problem.New(problem.TrailingSlash, "The path has a trailing slash. Use /v1/properties."),
	},
	problem.InvalidPathCasing: {
		when: "The path matches a known route only when case is ignored, such as /v1/Properties.",
		do:   "Paths are case-sensitive: call the canonical path named in detail.",
		path: "/v1/Properties", example: problem.New(problem.InvalidPathCasing, "Paths are case-sensitive. Use /v1/properties."),
	},
	problem.MissingRequiredHeader: {
		when: "An authenticated endpoint was called without a User-Agent header, or with an empty one.",
		do:   "Send a User-Agent naming your software and version, for example 'AcmeChannelManager/4.2'.",
		example: &problem.Error{Code: problem.MissingRequiredHeader, Detail: "One or more request headers are missing or invalid.",
			Errors: []problem.FieldError{fe("User-Agent", problem.FieldRequired, "User-Agent is required: name the calling software.")}},
	},
	problem.InvalidHeader: {
		when: "User-Agent is shorter than 3 or longer than 255 characters, holds a byte outside printable ASCII, or is sent twice; or Svc-Correlation-Id is malformed or longer than 128 characters (then it is not echoed).",
		do:   "Fix the header named in errors. Svc-Correlation-Id is optional: leave it out rather than send an invalid one.",
		example: &problem.Error{Code: problem.InvalidHeader, Detail: "One or more request headers are missing or invalid.",
			Errors: []problem.FieldError{fe("Svc-Correlation-Id", problem.FieldInvalidFormat, "Svc-Correlation-Id must be sent once, as 1 to 128 characters of A-Z, a-z, 0-9 and . _ = + / -.")}},
	},
	problem.UnexpectedRequestBody: {
		when:    "A GET request announced a body: Content-Length above 0, Transfer-Encoding, or an HTTP/2 stream carrying data. The connection is closed after the answer.",
		do:      "Send GET requests without a body; check that your HTTP library does not add one.",
		example: problem.New(problem.UnexpectedRequestBody, "GET requests take no body."),
	},
	problem.MissingAuthHeader: {
		when:    "An authenticated endpoint (everything but /v1/health) was called without an Authorization header.",
		do:      "Send 'Authorization: Bearer <API key>'. See Authentication.",
		example: withHeader(problem.New(problem.MissingAuthHeader, "Send the API key as 'Authorization: Bearer <API key>'."), "Www-Authenticate", challenge),
	},
	problem.InvalidAuthHeader: {
		when:    "The Authorization header is not 'Bearer <token>': another scheme (Basic), an empty token, or the header sent twice. The scheme name is case-insensitive.",
		do:      "Send exactly one header of the form 'Authorization: Bearer <API key>'.",
		example: withHeader(problem.New(problem.InvalidAuthHeader, "The Authorization header must be sent once, as 'Bearer <API key>'."), "Www-Authenticate", challenge),
	},
	problem.InvalidAPIKey: {
		when:    "The key is not of the key format (svc_live_ or svc_test_ and at least 24 letters and digits) or no such key exists. Repeated failures from one address are throttled with 429 RATE_LIMITED.",
		do:      "Check that the whole key was copied. Do not retry with the same key: every failure counts toward the throttle of your address.",
		example: withHeader(problem.New(problem.InvalidAPIKey, "The API key is malformed or unknown."), "Www-Authenticate", challengeT),
	},
	problem.APIKeyExpired: {
		when:    "The key is known but its expiry time has passed.",
		do:      "Ask partner support for a new key and replace the expired one. Do not retry.",
		example: withHeader(problem.New(problem.APIKeyExpired, "The API key expired at 2026-10-31T00:00:00Z."), "Www-Authenticate", challengeT),
	},
	problem.InvalidAccessToken: {
		when: "Where OAuth 2.0 access tokens are on, a bearer credential without the svc_live_/svc_test_ prefix is taken as an access token, and this one is malformed, not signed by the authorization server's keys, for another issuer or audience, not yet valid, or of a client with no record at the brand. Counts toward the failed-authentication throttle.",
		do:   "Get a new token from the authorization server with your client credentials, for this API's audience, and check that your client is registered with the brand. Do not retry with the same token.",
		example: withHeader(problem.New(problem.InvalidAccessToken,
			"The access token is malformed, not signed by the authorization server, or not issued for this API."), "Www-Authenticate", challengeT),
	},
	problem.AccessTokenExpired: {
		when: "The access token's exp has passed (60 seconds of clock skew allowed). Counts toward the failed-authentication throttle.",
		do:   "Get a new token from the authorization server and retry once; refresh tokens shortly before they expire.",
		example: withHeader(problem.New(problem.AccessTokenExpired,
			"The access token has expired. Get a new one from the authorization server."), "Www-Authenticate", challengeT),
	},
	problem.APIKeySuspended: {
		when:    "The key is known and not expired, but suspended by the brand.",
		do:      "Contact partner support. Retrying does not help.",
		example: problem.New(problem.APIKeySuspended, "The API key is suspended."),
	},
	problem.BrandAccessDenied: {
		when:    "The key was issued for another brand than the one this host serves.",
		do:      "Call the host of the key's brand, or use a key of this brand.",
		example: problem.New(problem.BrandAccessDenied, "The API key is not valid for this brand."),
	},
	problem.InsufficientScope: {
		when:    "The key's scopes do not include properties:read, which every v1 endpoint needs.",
		do:      "Ask partner support for a key with the properties:read scope.",
		example: problem.New(problem.InsufficientScope, "The API key lacks the scope properties:read."),
	},
	problem.TestModeUnavailable: {
		when:    "A test-mode key (svc_test_) was sent to a deployment that has no sandbox.",
		do:      "Use a live key here, or the deployment that serves test mode.",
		example: problem.New(problem.TestModeUnavailable, "This deployment does not serve test-mode keys."),
	},
	problem.PropertyAccessDenied: {
		when: "Reserved for property-scoped routes (those that read Svc-Property-Id) when the key is not granted the property. No v1 route is property-scoped, so v1 never sends it.",
		do:   "Use a property the key is granted, or ask partner support to grant it.",
		path: "/v1/properties/" + exampleID, example: problem.New(problem.PropertyAccessDenied, "The API key is not granted this property."),
	},
	problem.RouteNotFound: {
		when: "No endpoint exists at the path: a typo, /v1 without its slash, or any path outside /v1.",
		do:   "Check the path against the API reference; all endpoints live under /v1/.",
		path: "/v1/hotels", example: problem.New(problem.RouteNotFound, "No endpoint exists at this path."),
	},
	problem.PropertyNotFound: {
		when: "No property with this id is available to the key: it does not exist, belongs to another brand, or the key is not granted it. The answer never reveals which.",
		do:   "Use ids from GET /v1/properties with the same key. Do not retry unchanged.",
		path: "/v1/properties/" + exampleID, example: problem.New(problem.PropertyNotFound, "No property with this id is available to this API key."),
	},
	problem.EventsCursorExpired: {
		when: "GET /v1/events was given an after cursor older than the events the API keeps: events are kept for a week by default and up to a bounded number, and a restart of a deployment without a shared feed forgets them. Events after that cursor may be gone, so none are answered.",
		do:   "List the properties again (GET /v1/properties, every page), replace your copy, then follow GET /v1/events from the list's meta.events.next. Read the feed more often than the retention. See Keeping in sync.",
		path: "/v1/events",
		example: problem.New(problem.EventsCursorExpired,
			"The after cursor is older than the events kept. List the properties again and follow the feed from the list's meta.events.next."),
	},
	problem.ListSnapshotExpired: {
		when: "GET /v1/properties was given an asOf cursor naming a snapshot of the list the API no longer holds: a snapshot stays available for 15 minutes by default after a newer one replaced it (less when many properties changed at once), and a member of a deployment may not hold one another member served. The pages you read from it are still consistent with each other; the ones left cannot be served from it.",
		do:   "List again from page 1 without asOf, keep that page's meta.events.next, and pass it as asOf to the other pages (and as after to GET /v1/events). Read a listing's pages without long pauses. See Keeping in sync.",
		path: "/v1/properties",
		example: problem.New(problem.ListSnapshotExpired,
			"The snapshot asOf names is no longer held. List the properties again from page 1 without asOf and pin the other pages to the new meta.events.next."),
	},
	problem.MalformedJSON: {
		when:    "POST /v1/webhook-endpoints was sent a body that is not one JSON object in UTF-8: it does not parse, has data after the object, or names a member twice.",
		do:      "Send exactly one JSON object, each member once, encoded as UTF-8.",
		path:    "/v1/webhook-endpoints",
		example: problem.New(problem.MalformedJSON, "The request body names the member url twice."),
	},
	problem.UnknownBodyField: {
		when: "A request body holds a member the endpoint does not take, another casing of a known one (URL for url) included.",
		do:   "Send only the documented members, spelt as documented; errors names each unknown one.",
		path: "/v1/webhook-endpoints",
		example: &problem.Error{Code: problem.UnknownBodyField, Detail: "The request body holds members this endpoint does not take: it takes url and description.",
			Errors: []problem.FieldError{fe("URL", problem.FieldUnknownField, "Names are case-sensitive: did you mean url?")}},
	},
	problem.WebhookEndpointNotFound: {
		when:    "A webhook endpoint id that does not exist, was deleted, or was created with another API key.",
		do:      "List your endpoints (GET /v1/webhook-endpoints) with the key that created them and use an id from there.",
		path:    "/v1/webhook-endpoints/whe_0000000000000000000000aa",
		example: problem.New(problem.WebhookEndpointNotFound, "No webhook endpoint with this id belongs to this API key."),
	},
	problem.WebhookEndpointExists: {
		when:    "POST /v1/webhook-endpoints named a url the key already has an endpoint for.",
		do:      "Use the endpoint you have (its secret was shown when you created it), or delete it and create it again for a new secret.",
		path:    "/v1/webhook-endpoints",
		example: problem.New(problem.WebhookEndpointExists, "This API key already has a webhook endpoint with this url."),
	},
	problem.WebhookEndpointLimit: {
		when:    "POST /v1/webhook-endpoints for a key that already has 10 endpoints.",
		do:      "Delete an endpoint you no longer use, then create the new one.",
		path:    "/v1/webhook-endpoints",
		example: problem.New(problem.WebhookEndpointLimit, "This API key has 10 webhook endpoints, the most it may have: delete one first."),
	},
	problem.PayloadTooLarge: {
		when:    "A request body larger than 16 KiB. The API stops reading at the limit and closes the connection.",
		do:      "Send a smaller body: a webhook endpoint's url is at most 2,048 characters and its description 200.",
		path:    "/v1/webhook-endpoints",
		example: problem.New(problem.PayloadTooLarge, "The request body is larger than 16 KiB (16384 bytes)."),
	},
	problem.UnsupportedMediaType: {
		when:    "A request body sent without Content-Type: application/json (a charset parameter other than utf-8 included).",
		do:      "Send Content-Type: application/json (optionally ; charset=utf-8) with the JSON body.",
		path:    "/v1/webhook-endpoints",
		example: problem.New(problem.UnsupportedMediaType, "Send the request body as JSON with Content-Type: application/json (a charset parameter may only be utf-8)."),
	},
	problem.MethodNotAllowed: {
		when:    "A known route was called with a method other than GET (HEAD and OPTIONS included). Answered before authentication.",
		do:      "Use GET, as the Allow header says.",
		example: withHeader(&problem.Error{Code: problem.MethodNotAllowed, Detail: "Only GET is supported on this endpoint."}, "Allow", "GET"),
	},
	problem.NotAcceptable: {
		when:    "The Accept header admits neither application/json, application/*, nor */*.",
		do:      "Send 'Accept: application/json' or no Accept header. Errors are always application/problem+json.",
		example: problem.New(problem.NotAcceptable, "This API produces application/json only."),
	},
	problem.ValidationFailed: {
		when: "Well-formed integers are out of range: page below 1 or above 2147483647, perPage below 1 or above 100, limit below 1 or above 100; or an after cursor of GET /v1/events that the API never issued (code INVALID_FORMAT). A 400 problem of the same request wins.",
		do:   "Correct the values named in errors (code OUT_OF_RANGE; for after, pass a meta.events.next exactly as received). Do not retry unchanged.",
		example: &problem.Error{Code: problem.ValidationFailed, Detail: "One or more query parameters are out of range.",
			Errors: []problem.FieldError{fe("perPage", problem.FieldOutOfRange, "perPage must be between 1 and 100.")}},
	},
	problem.RateLimited: {
		when: "The key has used its quota (while per-key limiting is on; the answer then carries RateLimit-Policy and RateLimit), or too many invalid API keys came from your address.",
		do:   "Wait the number of seconds in Retry-After, then retry. Pace requests with the RateLimit fields; see Rate limits.",
		example: &problem.Error{Code: problem.RateLimited, RetryAfter: 2 * time.Second,
			Detail: "This API key has used its request quota. Retry after the number of seconds in Retry-After."},
	},
	problem.InternalError: {
		when:    "A fault of the edge itself. Nothing about it is disclosed in the answer; it is logged with the requestId.",
		do:      "Retry later with backoff; if it persists, contact partner support quoting requestId.",
		example: problem.New(problem.InternalError, "An unexpected fault occurred in the API. It has been logged; retry later and quote the requestId when contacting support."),
	},
	problem.BadGateway: {
		when:    "The hotel system behind the API failed or answered nonsense, retries included, and no cached data could answer.",
		do:      "Retry later with backoff; quote requestId when contacting support.",
		example: problem.New(problem.BadGateway, "A system behind the API failed or gave an invalid answer. Retry later and quote the requestId when contacting support."),
	},
	problem.ServiceUnavailable: {
		when: "The edge sheds load, is draining for a restart, or the system behind it asked to back off, with no cached data to answer.",
		do:   "Wait the number of seconds in Retry-After, then retry.",
		example: &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: time.Second,
			Detail: "The API is at capacity. Retry after the number of seconds in Retry-After."},
	},
	problem.GatewayTimeout: {
		when:    "The system behind the API did not answer within the request deadline (10 seconds by default), and no cached data could answer.",
		do:      "Retry later with backoff.",
		example: problem.New(problem.GatewayTimeout, "The property system did not answer in time. Retry later."),
	},
}

// fieldCode is one field-error code (docs/partner-api.md section 7.4, docs/contract.md section 5).
type fieldCode struct {
	Code, Meaning string
	In            []problem.Code // problem codes whose errors carry it in v1
}

// fieldCodes are the field-error codes of FieldError.code in
// docs/openapi.yaml; TestFieldCodesComplete holds them to problem's list.
var fieldCodes = []fieldCode{
	{problem.FieldRequired, "A required field or header is missing or empty (User-Agent).",
		[]problem.Code{problem.MissingRequiredHeader}},
	{problem.FieldInvalidFormat, "A value is not of the expected format: a query value that is not a plain decimal integer or is repeated, a propertyId that is not a UUID, a malformed User-Agent or Svc-Correlation-Id, an after cursor the API never issued (with VALIDATION_FAILED).",
		[]problem.Code{problem.InvalidQueryParameter, problem.InvalidPathParameter, problem.InvalidHeader, problem.ValidationFailed}},
	{problem.FieldInvalidEnumValue, "A value is not one of the allowed values. No v1 parameter is an enumeration, so v1 does not send it; it is reserved for later versions.",
		nil},
	{problem.FieldOutOfRange, "A well-formed number is outside its allowed range (page 1 to 2147483647, perPage and limit 1 to 100).",
		[]problem.Code{problem.ValidationFailed}},
	{problem.FieldTooLong, "A value is longer than allowed (User-Agent past 255 characters, Svc-Correlation-Id past 128).",
		[]problem.Code{problem.InvalidHeader}},
	{problem.FieldUnknownParameter, "A query parameter name is not accepted by the endpoint; detail suggests the right spelling of a near miss.",
		[]problem.Code{problem.UnknownQueryParameter}},
}
