package mapping

import "encoding/json"

// TimeFormat is the contract's timestamp layout: UTC, milliseconds, Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// wire fixes the public field order of partner-api-v1.md 2.1.
type wire struct {
	Object    string  `json:"object"`
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Code      *string `json:"code"`
	Status    string  `json:"status"`
	Timezone  string  `json:"timezone"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
}

// MarshalJSON writes the public representation. Callers on the hot path
// encode once per PMS load and keep the bytes.
func (p Property) MarshalJSON() ([]byte, error) {
	return json.Marshal(wire{
		Object:    "property",
		ID:        p.ID,
		Name:      p.Name,
		Code:      p.Code,
		Status:    p.Status,
		Timezone:  p.Timezone,
		CreatedAt: p.CreatedAt.UTC().Format(TimeFormat),
		UpdatedAt: p.UpdatedAt.UTC().Format(TimeFormat),
	})
}
