package pmsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
	if s.cfg.PageSize > 0 {
		limit = min(limit, s.cfg.PageSize)
	}
	var walk uint64
	var offset int
	if v, ok := q["cursor"]; ok {
		if walk, offset, ok = s.parseCursor(brand, v[0]); !ok || len(v) > 1 {
			writeError(w, http.StatusBadRequest, "invalid_cursor")
			return
		}
	} else if s.cfg.ShuffleEachWalk {
		walk = s.walks.next()
	}
	s.mu.RLock()
	var page []json.RawMessage
	more := false
	span := 0 // slots the page covers: cursors are offsets in slots
	if d := s.data[brand]; d != nil && offset < len(d.recs) {
		end := min(offset+limit, len(d.recs))
		span = end - offset
		switch {
		case walk == 0 && len(d.free) == 0: // no emptied slot (churn.go)
			page = d.recs[offset:end]
		case walk == 0:
			for _, rec := range d.recs[offset:end] {
				if rec != nil {
					page = append(page, rec)
				}
			}
		default: // a shuffled walk: the same order for every page of it
			order := rand.New(rand.NewPCG(walk, uint64(len(d.recs)))).Perm(len(d.recs))
			for _, i := range order[offset:end] {
				if d.recs[i] != nil {
					page = append(page, d.recs[i])
				}
			}
		}
		more = end < len(d.recs)
	}
	var next any // null: the last page
	if more {
		next = s.cursor(brand, walk, s.cfg.Drift.nextOffset(offset, span))
	} else if s.cfg.Drift.Paging == PagingEmptyCursor {
		next = ""
	}
	body := listBody(page, s.cfg.Drift.cursorKey(), next)
	s.mu.RUnlock()
	s.stats.page(len(page))
	writeJSON(w, http.StatusOK, body)
}

// walkSeeds hands out the seeds of shuffled walks (Config.ShuffleEachWalk).
type walkSeeds struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (ws *walkSeeds) next() uint64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for {
		if v := ws.rng.Uint64(); v != 0 { // 0 is the stored order
			return v
		}
	}
}

// listBody is the envelope of page; cursorKey names the next cursor
// (Drift.Paging may rename it), next (a string, or nil for null).
func listBody(page []json.RawMessage, cursorKey string, next any) []byte {
	var b bytes.Buffer
	b.WriteString(`{"hotels":[`)
	for i, rec := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(rec)
	}
	c, _ := json.Marshal(next)
	b.WriteString(`],"` + cursorKey + `":`)
	b.Write(c)
	b.WriteByte('}')
	return b.Bytes()
}

// A cursor is base64url("<brand>|<walk>|<offset>|<mac>"), where mac ties the
// rest to this Sim: a cursor made up, edited or taken from another brand is
// refused. walk is 0 for the stored order, else the seed of a shuffled walk.
func (s *Sim) cursor(brand string, walk uint64, offset int) string {
	raw := brand + "|" + strconv.FormatUint(walk, 10) + "|" + strconv.Itoa(offset)
	return base64.RawURLEncoding.EncodeToString([]byte(raw + "|" + s.mac(raw)))
}

func (s *Sim) parseCursor(brand, c string) (walk uint64, offset int, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	raw := string(b)
	rest, ok1 := strings.CutPrefix(raw, brand+"|")
	wk, rest, ok2 := strings.Cut(rest, "|")
	off, mac, ok3 := strings.Cut(rest, "|")
	if err != nil || !ok1 || !ok2 || !ok3 || mac != s.mac(raw[:len(raw)-len(mac)-1]) {
		return 0, 0, false
	}
	walk, err1 := strconv.ParseUint(wk, 10, 64)
	offset, err2 := strconv.Atoi(off)
	return walk, offset, err1 == nil && err2 == nil && offset >= 0
}

func (s *Sim) mac(raw string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", s.salt, raw)
	return strconv.FormatUint(h.Sum64(), 36)
}
