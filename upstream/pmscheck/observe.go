package pmscheck

import (
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/partner-edge/partner-edge/upstream/pms"
)

// exchange is one HTTP attempt of the edge's client as the recorder saw it:
// what was asked, what came back, and the body bytes the client read.
type exchange struct {
	url         *url.URL
	status      int // 0: the attempt failed before an answer
	contentType string
	body        []byte // what the client read
	complete    bool   // the client read the body to its end
}

// recorder collects the exchanges of one check, in the order their bodies
// were done with (the walk is sequential, so that is the order of pages).
// While onAdd is set (the list walk), each exchange is handed to it as it
// is done with and its body let go: the check holds one page at a time
// (docs/contract.md section 17). After stop, exchanges are kept (the gets).
type recorder struct {
	mu    sync.Mutex
	all   []*exchange
	onAdd func(*exchange)
}

func (r *recorder) add(x *exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.onAdd == nil {
		r.all = append(r.all, x)
		return
	}
	r.onAdd(x)
	x.body = nil
}

// stop ends the hand-over to onAdd.
func (r *recorder) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onAdd = nil
}

func (r *recorder) exchanges() []*exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*exchange(nil), r.all...)
}

// wrap is a ClientConfig.WrapTransport: the client's attempts go through
// next as before, and each answer's body is copied as the client reads it.
// The client's own bounds (MaxBodyBytes, timeouts) decide how much is read:
// the recorder sees exactly what the edge would.
func (r *recorder) wrap(next func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		if next != nil {
			rt = next(rt)
		}
		return recordingTransport{rt: rt, rec: r}
	}
}

// maxRecorded bounds the room made ahead for a body of announced size: the
// client reads no more than its MaxBodyBytes, whatever is announced.
const maxRecorded = pms.DefaultMaxBodyBytes

type recordingTransport struct {
	rt  http.RoundTripper
	rec *recorder
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.rt.RoundTrip(req)
	if err != nil {
		t.rec.add(&exchange{url: req.URL})
		return nil, err
	}
	x := &exchange{url: req.URL, status: res.StatusCode, contentType: res.Header.Get("Content-Type")}
	if n := res.ContentLength; n > 0 && n <= maxRecorded {
		x.body = make([]byte, 0, n) // one allocation when the size is told
	}
	res.Body = &teeBody{rc: res.Body, x: x, rec: t.rec}
	return res, nil
}

// teeBody copies what is read and hands the exchange to the recorder once,
// at the end of the body or when it is closed.
type teeBody struct {
	rc   io.ReadCloser
	x    *exchange
	rec  *recorder
	once sync.Once
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.x.body = append(b.x.body, p[:n]...)
	if err == io.EOF {
		b.x.complete = true
		b.done()
	}
	return n, err
}

func (b *teeBody) Close() error {
	b.done()
	return b.rc.Close()
}

func (b *teeBody) done() { b.once.Do(func() { b.rec.add(b.x) }) }
