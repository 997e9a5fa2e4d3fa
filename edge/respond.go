package edge

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/contentcoding"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// bufPool holds response buffers: a cached answer is assembled from bytes
// encoded once per PMS load, so the hot path is copying, not encoding.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// maxPooled keeps one rare huge response from pinning memory in the pool.
const maxPooled = 256 << 10

// responder is what every answer needs: the problem writer (fail), the
// clock of meta.timestamp, the compressor. Taken by value: no request state.
type responder struct {
	problems problem.Writer
	now      func() time.Time
	comp     *compressor // nil: answers are never compressed
}

// writeOne answers {"data": data, "meta": {...}}.
func (s responder) writeOne(w http.ResponseWriter, r *http.Request, data []byte) {
	bp := bufPool.Get().(*[]byte)
	b := append((*bp)[:0], `{"data":`...)
	b = append(b, data...)
	b = s.appendMeta(b, r, nil)
	b = append(b, '}')
	s.write(w, r, b)
	putBuf(bp, b)
}

// writePage answers a list: {"data": [...], "meta": {..., "pagination"}},
// assembled in one pooled buffer and written with one Write (in three
// pieces, net/http's 2 KB buffer split the middle one: one more write
// system call, far more than copying 12 KB). Compressed: writePageCoded.
func (s responder) writePage(w http.ResponseWriter, r *http.Request, p page) {
	if ae, ok := r.Header["Accept-Encoding"]; ok && s.comp != nil && p.snap != nil &&
		s.writePageCoded(w, r, p, contentcoding.Negotiate(ae)) {
		return
	}
	bp := bufPool.Get().(*[]byte)
	b := append((*bp)[:0], pageStart...)
	b = appendItems(b, p)
	b = append(b, ']')
	b = s.appendMeta(b, r, &p)
	b = append(b, '}')
	s.write(w, r, b)
	putBuf(bp, b)
}

// pageStart is what a page's body has before its items' JSON; the start a
// page cache compresses is pageStart, the items, and "]".
const pageStart = `{"data":[`

// appendItems appends the page's items, comma-separated.
func appendItems(b []byte, p page) []byte {
	b = append(b, p.joined...)
	for i, it := range p.items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it.JSON...)
	}
	return b
}

// write answers 200 with body b, compressed per request when
// Accept-Encoding and b's size call for it; with Vary: Accept-Encoding,
// plain too, since another request's could be compressed.
func (s responder) write(w http.ResponseWriter, r *http.Request, b []byte) {
	w.Header()["Vary"] = contentcoding.VaryHeader
	if ae, ok := r.Header["Accept-Encoding"]; ok && s.comp != nil {
		if c := contentcoding.Negotiate(ae).For(len(b)); c != contentcoding.Identity {
			cp := bufPool.Get().(*[]byte)
			out := s.comp.fast.Append((*cp)[:0], c, b)
			writeCoded(w, c, out)
			putBuf(cp, out)
			return
		}
	}
	writeJSON(w, http.StatusOK, b)
}

// appendMeta appends ,"meta":{...}. The request id, the timestamp and
// the events cursor need no JSON escaping: all are drawn from safe
// alphabets.
func (s responder) appendMeta(b []byte, r *http.Request, p *page) []byte {
	b = s.appendMetaStart(b, r)
	if p != nil {
		b = append(b, `,"pagination":{"page":`...)
		b = strconv.AppendInt(b, p.number, 10)
		b = append(b, `,"perPage":`...)
		b = strconv.AppendInt(b, p.size, 10)
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, p.total, 10)
		b = append(b, '}')
		if p.next != "" {
			b = append(b, `,"events":{"next":"`...)
			b = append(b, p.next...)
			b = append(b, `"}`...)
		}
	}
	return append(b, '}')
}

// appendMetaStart appends ,"meta":{ with the request id and timestamp.
func (s responder) appendMetaStart(b []byte, r *http.Request) []byte {
	b = append(b, `,"meta":{"requestId":"`...)
	b = append(b, RequestID(r.Context())...)
	b = append(b, `","timestamp":"`...)
	b = mapping.AppendTime(b, s.now()) // the one timestamp encoder
	return append(b, '"')
}

// writeEvents answers GET /v1/events: {"data": [Event...], "meta": {...,
// "events": {"next", "hasMore"}}}, the events' JSON copied as encoded once
// by the feed, in one pooled buffer and one Write, as a list page is.
func (s responder) writeEvents(w http.ResponseWriter, r *http.Request, f *events.Feed, after string, hasAfter bool, limit int, v events.Viewer) {
	bp := bufPool.Get().(*[]byte)
	b, pg, err := f.AppendPage(r.Context(), append((*bp)[:0], pageStart...), after, hasAfter, limit, v)
	if err != nil {
		putBuf(bp, b)
		s.fail(w, r, err)
		return
	}
	b = append(b, ']')
	b = s.appendMetaStart(b, r)
	b = append(b, `,"events":{"next":"`...)
	b = append(b, pg.Next...)
	b = append(b, `","hasMore":`...)
	b = strconv.AppendBool(b, pg.More)
	b = append(b, "}}}"...)
	s.write(w, r, b)
	putBuf(bp, b)
}

func putBuf(bp *[]byte, b []byte) {
	if cap(b) > maxPooled {
		return
	}
	*bp = b[:0]
	bufPool.Put(bp)
}

var contentTypeJSON = []string{"application/json"}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	setJSONHeaders(w, len(body))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// setJSONHeaders sets Content-Type and Content-Length, the length's value
// backed by the request's state through the edge's own writer.
func setJSONHeaders(w http.ResponseWriter, length int) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	v := strconv.Itoa(length)
	if sw, ok := w.(*statusWriter); ok {
		sw.lenHeader[0] = v
		h["Content-Length"] = sw.lenHeader[:]
		return
	}
	h["Content-Length"] = []string{v}
}
