package pmsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
)

// list answers one page of a brand's hotels.
func (s *Sim) list(w http.ResponseWriter, r *http.Request, brand string) {
	q := r.URL.Query()
	limit := DefaultLimit
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxLimit || len(v) > 1 {
			writeError(w, http.StatusBadRequest, "invalid_limit")
			return
		}
		limit = n
	}
	if s.cfg.PageSize > 0 && limit > s.cfg.PageSize {
		limit = s.cfg.PageSize
	}
	offset := 0
	if v, ok := q["cursor"]; ok {
		off, ok := s.parseCursor(brand, v[0])
		if !ok || len(v) > 1 {
			writeError(w, http.StatusBadRequest, "invalid_cursor")
			return
		}
		offset = off
	}
	s.mu.RLock()
	var page []json.RawMessage
	more := false
	if d := s.data[brand]; d != nil && offset < len(d.recs) {
		end := min(offset+limit, len(d.recs))
		page = d.recs[offset:end]
		more = end < len(d.recs)
	}
	body := listBody(page, more, s.cursor(brand, offset+len(page)))
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, body)
}

func listBody(page []json.RawMessage, more bool, next string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"hotels":[`)
	for i, rec := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(rec)
	}
	b.WriteString(`],"nextCursor":`)
	if more {
		c, _ := json.Marshal(next)
		b.Write(c)
	} else {
		b.WriteString("null")
	}
	b.WriteByte('}')
	return b.Bytes()
}

// A cursor is base64url("<brand>|<offset>|<mac>"), where mac ties the two to
// this Sim: a cursor made up, edited or taken from another brand is refused.
func (s *Sim) cursor(brand string, offset int) string {
	raw := brand + "|" + strconv.Itoa(offset)
	return base64.RawURLEncoding.EncodeToString([]byte(raw + "|" + s.mac(raw)))
}

func (s *Sim) parseCursor(brand, c string) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(raw, '|')
	if i < 0 || string(raw[i+1:]) != s.mac(string(raw[:i])) {
		return 0, false
	}
	b, off, ok := strings.Cut(string(raw[:i]), "|")
	if !ok || b != brand {
		return 0, false
	}
	n, err := strconv.Atoi(off)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func (s *Sim) mac(raw string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", s.salt, raw)
	return strconv.FormatUint(h.Sum64(), 36)
}
