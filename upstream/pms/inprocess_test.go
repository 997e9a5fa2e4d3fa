package pms

import (
	"encoding/json"
	"net/http"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// localBase is the base URL of PMSs served in process.
const localBase = "http://pms.test"

// newLocalPMS is a fakePMS without a listener: use it with
// localConfig.
func newLocalPMS(hotels []json.RawMessage) *fakePMS { return &fakePMS{hotels: hotels} }

// localConfig is testConfig for h served in process.
func localConfig(h http.Handler) ClientConfig {
	cfg := testConfig(localBase)
	cfg.Transport = testkit.InProcess{Handler: h}
	return cfg
}
