package upstream

import "encoding/json"

// pageDecoder decodes list pages with encoding/json into a listPage; one
// per walk, its records slice reused from page to page.
type pageDecoder struct{ page listPage }

// decode parses body, one list page: its records (slices of body, valid
// until the next call), whether it had a hotels array (present, not null),
// and its nextCursor (nil: absent or null). err is encoding/json's error
// for a page that is not the expected JSON.
func (d *pageDecoder) decode(body []byte) (recs []bodySlice, hotels bool, next *string, err error) {
	d.page.Hotels.set, d.page.NextCursor = false, nil
	d.page.Hotels.recs = d.page.Hotels.recs[:0]
	if err := json.Unmarshal(body, &d.page); err != nil {
		return nil, false, nil, err
	}
	return d.page.Hotels.recs, d.page.Hotels.set, d.page.NextCursor, nil
}

// validJSON is the check of each record a get answers: encoding/json.Valid.
func validJSON(b []byte) bool { return json.Valid(b) }
