package fleet

import "github.com/partner-edge/partner-edge/upstream/redisconn"

// SnapKey names the shared snapshot of a brand and mode ("live",
// "sandbox"); the store appends ":data" and ":lease".
func SnapKey(brand, mode string) string {
	return "pe:snap:" + redisconn.KeyPart(brand) + ":" + redisconn.KeyPart(mode)
}
