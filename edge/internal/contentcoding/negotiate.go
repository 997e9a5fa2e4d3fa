// Package contentcoding compresses answers (docs/contract.md section 18): it
// negotiates a content coding from Accept-Encoding (RFC 9110 section
// 12.5.3), compresses with klauspost/compress (gzip and zstd), and makes a
// cached body's compression a one-time cost: a Static is the body's start
// compressed once, completed per request with a small uncompressed tail
// (the envelope's meta) in a few hundred nanoseconds. Used by edge (API
// answers) and edge/docsite (the documentation site).
package contentcoding

import "strings"

// Coding is a content coding the edge can send.
type Coding uint8

const (
	Identity Coding = iota // no coding
	Zstd                   // zstd, RFC 8878
	Gzip                   // gzip, RFC 1952
)

// MinSize is the smallest body compressed (docs/contract.md section 18: 1 KiB):
// below it the coding's framing and the work cost more than the bytes they
// save.
const MinSize = 1 << 10

// VaryHeader is the Vary value of an answer whose coding follows
// Accept-Encoding.
var VaryHeader = []string{"Accept-Encoding"}

var (
	names   = [...]string{Identity: "identity", Zstd: "zstd", Gzip: "gzip"}
	headers = [...][]string{Zstd: {"zstd"}, Gzip: {"gzip"}}
)

// String is the coding's name in Content-Encoding.
func (c Coding) String() string { return names[c] }

// Header is the Content-Encoding value of c, shared: never modify it. Nil
// for Identity.
func (c Coding) Header() []string { return headers[c] }

// Choice is the outcome of a negotiation.
type Choice struct {
	// Coding is the coding to use for a body of MinSize or more: the
	// acceptable one of zstd and gzip with the highest q, zstd on a tie;
	// Identity when neither is acceptable, or when the client prefers
	// identity by an explicitly higher q.
	Coding Coding
	// IdentityRefused: the client excluded identity (identity;q=0, or *;q=0
	// without an identity entry). A body under MinSize is then compressed
	// too, when Coding is not Identity; when it is, the body is sent
	// uncompressed all the same (RFC 9110 section 12.5.3 lets a server send
	// identity rather than refuse).
	IdentityRefused bool
}

// For returns the coding for a body of n bytes.
func (c Choice) For(n int) Coding {
	if n >= MinSize || c.IdentityRefused {
		return c.Coding
	}
	return Identity
}

// Negotiate reads the Accept-Encoding field lines vs (RFC 9110 section
// 12.5.3). No field, or an empty one, means identity: a client that says
// nothing gets plain bytes, as every server does in practice. Codings are
// case-insensitive; x-gzip is gzip; "*" stands for every coding not named;
// a q outside 0..1 or malformed counts as 0 (never chosen). A coding named
// twice keeps its first entry. It reads without allocating, and at most
// MaxElements elements and MaxParams parameters of each: the rest is
// ignored.
func Negotiate(vs []string) Choice {
	const unset = -1
	qZstd, qGzip, qIdentity, qAny := unset, unset, unset, unset // q in thousandths
	n := 0
read:
	for _, v := range vs {
		for elem := range strings.SplitSeq(v, ",") {
			if n++; n > MaxElements {
				break read
			}
			name, params, _ := strings.Cut(elem, ";")
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			var slot *int
			switch {
			case strings.EqualFold(name, "zstd"):
				slot = &qZstd
			case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
				slot = &qGzip
			case strings.EqualFold(name, "identity"):
				slot = &qIdentity
			case name == "*":
				slot = &qAny
			default:
				continue
			}
			if *slot == unset {
				*slot = quality(params)
			}
		}
	}
	for _, q := range [...]*int{&qZstd, &qGzip, &qIdentity} {
		if *q == unset {
			*q = qAny
		}
	}
	c := Choice{IdentityRefused: qIdentity == 0}
	best := 0
	if qZstd > best {
		c.Coding, best = Zstd, qZstd
	}
	if qGzip > best {
		c.Coding, best = Gzip, qGzip
	}
	if qIdentity > best { // an explicit, higher preference for identity
		c.Coding = Identity
	}
	return c
}

// MaxElements and MaxParams bound what Negotiate reads of Accept-Encoding:
// the elements (empty ones included) over all its field lines, and the
// parameters of one element. A real client sends a handful of each; a
// header of 60,000 commas or semicolons then costs what 64 do, not time
// linear in the junk (docs/contract.md section 21). Elements past the
// bound are ignored, as if not sent.
const (
	MaxElements = 64
	MaxParams   = 8
)

// quality parses the q parameter of one Accept-Encoding element, in
// thousandths: absent is 1000; malformed or out of range is 0 (RFC 9110
// section 12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )).
// Only its first MaxParams parameters are read.
func quality(params string) int {
	n := 0
	for p := range strings.SplitSeq(params, ";") {
		if n++; n > MaxParams {
			break
		}
		name, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		return parseQ(strings.TrimSpace(val))
	}
	return 1000
}

func parseQ(s string) int {
	if s == "" || (s[0] != '0' && s[0] != '1') {
		return 0
	}
	q := int(s[0]-'0') * 1000
	if len(s) == 1 {
		return q
	}
	if s[1] != '.' || len(s) > 5 {
		return 0
	}
	scale := 100
	for i := 2; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return 0
		}
		q += int(d-'0') * scale
		scale /= 10
	}
	if q > 1000 {
		return 0
	}
	return q
}
