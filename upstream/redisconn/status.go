package redisconn

import (
	"encoding/json"
	"net/http"

	"github.com/partner-edge/partner-edge/upstream"
)

// StatusHandler serves GET /fleet on the admin listener (docs/contract.md
// section 17): whether Redis is configured, in which form and through which
// node(s), and its circuit breaker's state ("closed": shared; "open" or
// "half-open": in-process fallback). A nil c is an edge without Redis:
// {"redis":"off","shared":false}.
func (c *Client) StatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state := struct {
			Redis   string   `json:"redis"`             // "off" or "on"
			Form    string   `json:"form,omitempty"`    // primary, sentinel, cluster
			Master  string   `json:"master,omitempty"`  // the Sentinel form's master name
			Nodes   []string `json:"nodes,omitempty"`   // primary or current Sentinel primary; the Cluster's primaries
			Breaker string   `json:"breaker,omitempty"` // closed, half-open, open
			Shared  bool     `json:"shared"`            // limits and loads go through Redis now
		}{Redis: "off"}
		if c != nil {
			st := c.State()
			state.Redis, state.Breaker, state.Shared = "on", st.String(), st == upstream.BreakerClosed
			state.Form, state.Master, state.Nodes = string(c.Form()), c.master, c.Nodes(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(state)
	})
}
