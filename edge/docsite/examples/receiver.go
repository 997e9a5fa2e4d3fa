//go:build ignore

// A receiver of the Partner API's webhooks: it verifies each delivery with
// the Standard Webhooks library, drops an event it has already handled, and
// answers 204 quickly.
//
//	go get github.com/standard-webhooks/standard-webhooks/libraries
//	WEBHOOK_SECRET=whsec_... go run receiver.go
package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"sync"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Event is what each delivery's body holds: one event of GET /v1/events.
type Event struct {
	ID         string `json:"id"`
	Type       string `json:"type"` // property.created, property.updated, property.removed
	OccurredAt string `json:"occurredAt"`
	Data       struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"data"`
}

func main() {
	wh, err := standardwebhooks.NewWebhook(os.Getenv("WEBHOOK_SECRET")) // whsec_..., shown when you created the endpoint
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{} // webhook-ids handled; keep them where you keep your copy

	http.HandleFunc("POST /hooks", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		// Verify the raw body, before parsing it: the signature covers these bytes.
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "invalid signature", http.StatusBadRequest)
			return
		}
		var ev Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id := r.Header.Get("webhook-id"); !seen[id] { // at least once: a retry repeats the id
			apply(ev)
			seen[id] = true
		}
		w.WriteHeader(http.StatusNoContent)
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "8090"
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}

// apply changes your copy of the properties, as on Keeping in sync: store
// data by its id when created or updated and active, delete it otherwise.
func apply(ev Event) {
	log.Printf("%s %s %s %q", ev.ID, ev.Type, ev.Data.ID, ev.Data.Name)
}
