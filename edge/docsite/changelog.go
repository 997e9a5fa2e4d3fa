package docsite

import "github.com/partner-edge/partner-edge/problem"

// change is one entry of the changelog. Within v1 every change is additive
// (docs/partner-api.md section 9): clients ignore unknown fields and tolerate
// new enum values and codes.
type change struct {
	Title string
	Items []string
	// Codes are the problem codes the change introduced;
	// TestChangelogIntroducesEveryCode holds every code of the registry to
	// exactly one entry, so a new code cannot ship unannounced.
	Codes []problem.Code
}

// changelog is newest first.
var changelog = []change{
	{
		Title: "Webhooks: changes pushed to your endpoints",
		Items: []string{
			"POST /v1/webhook-endpoints registers an https URL to receive the events of GET /v1/events as Standard Webhooks v1 deliveries (webhook-id, webhook-timestamp, webhook-signature); the answer alone shows the endpoint's secret. GET lists a key's endpoints, GET and DELETE /v1/webhook-endpoints/{endpointId} read and remove one, POST .../enable resumes a disabled one.",
			"These routes need the scope webhooks:manage besides properties:read (403 INSUFFICIENT_SCOPE without it).",
			"Request bodies are checked in order: 415 UNSUPPORTED_MEDIA_TYPE, 413 PAYLOAD_TOO_LARGE (over 16 KiB), 400 MALFORMED_JSON, 400 UNKNOWN_BODY_FIELD, then 422 VALIDATION_FAILED. 404 WEBHOOK_ENDPOINT_NOT_FOUND for another key's endpoint or an unknown id; 409 WEBHOOK_ENDPOINT_EXISTS and WEBHOOK_ENDPOINT_LIMIT (10 per key).",
			"405 METHOD_NOT_ALLOWED's Allow names the methods each route serves (GET, POST on the collection).",
			"Receiving webhooks, a new page of this site: creating an endpoint, what a delivery holds, verifying it (receivers in Go, JavaScript and Python), dropping repeats by webhook-id, the retries, and enabling a disabled endpoint.",
		},
		Codes: []problem.Code{problem.MalformedJSON, problem.UnknownBodyField, problem.WebhookEndpointNotFound,
			problem.WebhookEndpointExists, problem.WebhookEndpointLimit, problem.PayloadTooLarge, problem.UnsupportedMediaType},
	},
	{
		Title: "One snapshot per listing: asOf",
		Items: []string{
			"GET /v1/properties takes asOf: the meta.events.next of the listing's first page. Every page given it is served from the same snapshot of the list (the same total, order and membership), so a copy made page by page misses nothing and holds nothing twice, whatever changes while you list.",
			"410 LIST_SNAPSHOT_EXPIRED answers an asOf whose snapshot is no longer held (15 minutes by default after a newer one replaced it): list again from page 1 without asOf.",
			"The events feed reports every property your key may get, active or not (a status change is property.updated); the list shows active ones only. To mirror the list, keep the properties whose status is active.",
			"A cursor the API never issued (a position past the last walk, or one no walk made) is now 422 VALIDATION_FAILED for after and asOf alike.",
		},
		Codes: []problem.Code{problem.ListSnapshotExpired},
	},
	{
		Title: "Property changes: GET /v1/events",
		Items: []string{
			"GET /v1/events: the changes to the properties your key may see (property.created, property.updated, property.removed), oldest first, each with the property as it now is (for a removal, as it last was). Follow it with after and limit instead of walking the list again; see Keeping in sync.",
			"GET /v1/properties carries meta.events.next: the feed's position when the page was served. List, then follow the feed from there, and you miss nothing in between.",
			"410 EVENTS_CURSOR_EXPIRED answers a cursor older than the events kept (a week by default): list again and take the new cursor.",
		},
		Codes: []problem.Code{problem.EventsCursorExpired},
	},
	{
		Title: "Documentation site and typed error responses",
		Items: []string{
			"This site: one page per error code at the problem's type URI, the API reference, authentication, rate limits and this changelog.",
			"The OpenAPI document gives each error response a concrete schema (code, status and errors typed), so generated clients branch on code without decoding twice. The wire format is unchanged.",
			"The traceparent request header has no pattern in the document any more: a malformed value is ignored, never refused, as it always was.",
			"TRAILING_SLASH is listed among the 400 codes of /v1/, /v1/properties and /v1/properties/{propertyId}: tools match a path with a slash added, such as /v1/properties/, to these operations.",
		},
	},
	{
		Title: "OAuth 2.0 access tokens",
		Items: []string{
			"Where the brand turns them on, OAuth 2.0 access tokens (JWT, RFC 9068) from its authorization server are accepted beside API keys, as Authorization: Bearer; API keys keep working.",
			"GET /.well-known/oauth-protected-resource/v1 (RFC 9728) names the authorization server, the audience and the scope properties:read; every 401 points at it.",
		},
		Codes: []problem.Code{problem.InvalidAccessToken, problem.AccessTokenExpired},
	},
	{
		Title: "Rate-limit fields and failed-authentication throttling",
		Items: []string{
			"While per-key limiting is on, authenticated answers carry RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers, structured fields); 429 RATE_LIMITED carries them with Retry-After.",
			"Repeated 401 INVALID_API_KEY answers to one client address are throttled with 429 RATE_LIMITED and Retry-After.",
			"503 SERVICE_UNAVAILABLE with Retry-After when the edge sheds load or the system behind it asks to back off.",
		},
	},
	{
		Title: "v1",
		Items: []string{
			"GET /v1/, /v1/health, /v1/properties and /v1/properties/{propertyId}.",
			"API keys (svc_live_ and svc_test_), test mode served from a sandbox.",
			"RFC 9457 problem details with a stable code on every error.",
		},
		Codes: []problem.Code{
			problem.MalformedQueryString, problem.UnknownQueryParameter, problem.InvalidQueryParameter,
			problem.InvalidPathParameter, problem.TrailingSlash, problem.InvalidPathCasing,
			problem.MissingRequiredHeader, problem.InvalidHeader, problem.UnexpectedRequestBody,
			problem.MissingAuthHeader, problem.InvalidAuthHeader, problem.InvalidAPIKey, problem.APIKeyExpired,
			problem.APIKeySuspended, problem.BrandAccessDenied, problem.InsufficientScope,
			problem.TestModeUnavailable, problem.PropertyAccessDenied, problem.RouteNotFound,
			problem.PropertyNotFound, problem.MethodNotAllowed, problem.NotAcceptable,
			problem.ValidationFailed, problem.RateLimited, problem.InternalError, problem.BadGateway,
			problem.ServiceUnavailable, problem.GatewayTimeout,
		},
	},
}
