// Package mapping turns the PMS's internal hotel records into the curated
// public Property (docs/pms-api.md sections 5 to 8). It is pure: no I/O,
// no clock, no logging; rejections are returned for the caller to log and
// count.
package mapping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// HotelRecord is the part of the PMS's record the edge reads. Fields the edge
// does not map, the internal object above all, are not even decoded, so they
// cannot leak by accident.
type HotelRecord struct {
	HotelID            string  `json:"hotel_id"`
	BrandCode          string  `json:"brand_code"`
	DisplayName        string  `json:"display_name"`
	ShortCode          *string `json:"short_code"`
	LegacyPropertyCode *string `json:"legacy_property_code"`
	Lifecycle          string  `json:"lifecycle"`
	TimeZone           string  `json:"time_zone"`
	CreatedAt          string  `json:"created_at"`
	// LastModifiedMS is a JSON number: an integer normally, but a float
	// written by a drifting producer is accepted too.
	LastModifiedMS *json.Number `json:"last_modified_ms"`
}

// Reason says why a record could not be mapped. Reasons are metric labels:
// a fixed, small set.
type Reason string

const (
	ReasonUndecodable      Reason = "undecodable"
	ReasonInvalidID        Reason = "invalid_id"
	ReasonOtherBrand       Reason = "other_brand"
	ReasonEmptyName        Reason = "empty_name"
	ReasonInvalidTimeZone  Reason = "invalid_time_zone"
	ReasonInvalidCreatedAt Reason = "invalid_created_at"
	ReasonInvalidModified  Reason = "invalid_last_modified"
	ReasonTooLong          Reason = "too_long" // name over MaxNameLen or code over MaxCodeLen characters
)

// Reasons lists every Reason, for pre-registering metric series.
var Reasons = []Reason{ReasonUndecodable, ReasonInvalidID, ReasonOtherBrand, ReasonEmptyName,
	ReasonInvalidTimeZone, ReasonInvalidCreatedAt, ReasonInvalidModified, ReasonTooLong}

// Rejection is the error for a record that cannot be mapped.
type Rejection struct {
	// HotelID is the record's id as sent (truncated to 64 bytes), for logs.
	HotelID string
	Reason  Reason
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("hotel %q rejected: %s", r.HotelID, r.Reason)
}

func reject(id string, reason Reason) *Rejection {
	if len(id) > 64 {
		// A copy: a slice would keep the whole id alive, however long
		// the PMS made it, in every rejection a walk keeps.
		id = strings.Clone(id[:64])
	}
	return &Rejection{HotelID: id, Reason: reason}
}

// Decode parses one record. A record that is not a JSON object of the
// expected field types is a *Rejection with ReasonUndecodable; unknown fields
// are ignored. Its id is hotel_id as sent: the string, or, when hotel_id is
// of another JSON type, its JSON text (so that forty records whose ids
// changed type are forty rejections, not one of an empty id).
func Decode(raw []byte) (HotelRecord, error) {
	var rec HotelRecord
	// json.Unmarshal takes null as an empty object; a null record is not one.
	if err := json.Unmarshal(raw, &rec); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		var probe struct {
			HotelID json.RawMessage `json:"hotel_id"`
		}
		_ = json.Unmarshal(raw, &probe)
		var id string
		if json.Unmarshal(probe.HotelID, &id) != nil && string(probe.HotelID) != "null" {
			id = string(probe.HotelID)
		}
		return HotelRecord{}, reject(id, ReasonUndecodable)
	}
	return rec, nil
}
