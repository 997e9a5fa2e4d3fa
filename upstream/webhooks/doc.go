// Package webhooks delivers the feed of property changes to the endpoints
// partners register (docs/webhooks.md): each event POSTed as Standard
// Webhooks v1 signs it (Sign, NewSecret), over an HTTP client that never
// connects to an address inside the brand's network (NewClient, Guard), in
// feed order per endpoint with the retry schedule of docs/webhooks.md and,
// after its last attempt, the endpoint disabled with a reason (Deliverer).
//
// It knows neither the feed nor where endpoints are kept: a Source reads
// events after a position, a Store keeps endpoints and their progress
// (Memory here; boltwebhooks and redishooks beneath), a Sender makes
// one attempt (HTTPSender). Delivery runs on the Deliverer's own goroutines,
// never on a partner's request, and stops with the context given to Run.
package webhooks
