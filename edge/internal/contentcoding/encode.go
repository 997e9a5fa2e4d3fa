package contentcoding

import (
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
)

// Level is how hard an Encoder works.
type Level uint8

const (
	// Fast is for a body compressed on every request: gzip level 1, zstd's
	// fastest.
	Fast Level = iota
	// Default is for a body compressed once and sent many times (a cached
	// page, a documentation page): gzip level 6, zstd's default.
	Default
)

// windowLog bounds zstd's window to 1 MiB: a decoder need not hold more
// (RFC 9659 caps the zstd content coding at 8 MiB), and the edge's bodies
// are far smaller but for the API reference page (about 1 MB).
const windowLog = 20

// Encoder compresses with one Level. Safe for concurrent use; it starts no
// goroutine.
type Encoder struct {
	gzipLevel int
	flates    sync.Pool // of *flateWriter
	zstd      *zstd.Encoder
}

// NewEncoder returns an Encoder at level l.
func NewEncoder(l Level) *Encoder {
	gz, zl := 1, zstd.SpeedFastest
	if l == Default {
		gz, zl = 6, zstd.SpeedDefault
	}
	// Options are constants: NewWriter cannot fail on them. Concurrency is
	// how many EncodeAll calls run at once (more wait): one per CPU.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zl), zstd.WithWindowSize(1<<windowLog),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithZeroFrames(true))
	if err != nil {
		panic("contentcoding: zstd options: " + err.Error())
	}
	return &Encoder{gzipLevel: gz, zstd: enc}
}

// flateWriter is a pooled deflate compressor writing into buf.
type flateWriter struct {
	w   *flate.Writer
	buf appender
}

// appender is an io.Writer appending to a slice.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// deflate appends src deflated to dst: a final stream when final, else one
// ended by a sync flush (byte-aligned, not final), which more deflate
// blocks may follow.
func (e *Encoder) deflate(dst, src []byte, final bool) []byte {
	fw, _ := e.flates.Get().(*flateWriter)
	if fw == nil {
		fw = &flateWriter{}
		fw.w, _ = flate.NewWriter(&fw.buf, e.gzipLevel) // a valid level: no error
	}
	fw.buf.b = dst
	fw.w.Reset(&fw.buf)
	_, _ = fw.w.Write(src) // appender never fails
	if final {
		_ = fw.w.Close()
	} else {
		_ = fw.w.Flush()
	}
	dst = fw.buf.b
	fw.buf.b = nil
	e.flates.Put(fw)
	return dst
}

// gzipHeader is RFC 1952's member header: no name, no time, OS unknown.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// Append appends src compressed with c to dst (src itself for Identity).
func (e *Encoder) Append(dst []byte, c Coding, src []byte) []byte {
	switch c {
	case Zstd:
		return e.zstd.EncodeAll(src, dst)
	case Gzip:
		dst = append(dst, gzipHeader...)
		dst = e.deflate(dst, src, true)
		return appendGzipTrailer(dst, crc32.ChecksumIEEE(src), uint32(len(src)))
	}
	return append(dst, src...)
}

func appendGzipTrailer(dst []byte, crc, size uint32) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return binary.LittleEndian.AppendUint32(dst, size)
}

// Static is the start of a body compressed once; AppendTo completes it
// with a tail that changes per request (the envelope's meta: request id,
// timestamp), at the cost of copying the compressed bytes and framing the
// tail uncompressed:
//
//   - gzip: one member. The start is deflated and ended with a sync flush,
//     so the deflate stream goes on; the tail follows as a final stored
//     block, and the CRC-32 goes on from the start's (CRC-32 is computed
//     incrementally) over the tail. Every gzip decoder reads one member.
//   - zstd: two frames, the start's and one raw block of the tail. RFC 8878
//     section 3.1: a stream of concatenated frames decodes to the
//     concatenation of their contents.
//
// The zero Static is empty and Identity.
type Static struct {
	coding Coding
	data   []byte // the compressed start: header and blocks, no trailer
	crc    uint32 // gzip: CRC-32 of the start
	size   uint32 // gzip: length of the start
}

// Static compresses start once with c (Zstd or Gzip; Identity keeps start
// as is).
func (e *Encoder) Static(c Coding, start []byte) Static {
	s := Static{coding: c}
	switch c {
	case Zstd:
		s.data = e.zstd.EncodeAll(start, make([]byte, 0, len(start)/4+64))
	case Gzip:
		s.data = append(make([]byte, 0, len(start)/4+64), gzipHeader...)
		s.data = e.deflate(s.data, start, false)
		s.crc, s.size = crc32.ChecksumIEEE(start), uint32(len(start))
	default:
		s.data = append([]byte(nil), start...)
	}
	return s
}

// Size is the length of the compressed start, for a cache's accounting.
func (s *Static) Size() int { return len(s.data) }

// AppendTo appends to dst the whole body, start then tail, in s's coding.
func (s *Static) AppendTo(dst, tail []byte) []byte {
	dst = append(dst, s.data...)
	switch s.coding {
	case Gzip:
		dst = appendStored(dst, tail)
		return appendGzipTrailer(dst, crc32.Update(s.crc, crc32.IEEETable, tail), s.size+uint32(len(tail)))
	case Zstd:
		return appendRawFrame(dst, tail)
	}
	return append(dst, tail...)
}

// appendStored appends b as deflate stored blocks (RFC 1951 section 3.2.4),
// the last one final: a byte-aligned header (BFINAL, BTYPE=00), LEN, NLEN.
func appendStored(dst, b []byte) []byte {
	for {
		n := min(len(b), 0xffff)
		final := byte(0)
		if n == len(b) {
			final = 1
		}
		dst = append(dst, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		dst = append(dst, b[:n]...)
		b = b[n:]
		if final == 1 {
			return dst
		}
	}
}

// zstd frame layout (RFC 8878 section 3.1.1).
const (
	zstdMagic    = 0xFD2FB528
	zstdMaxBlock = 128 << 10
	// Frame_Header_Descriptor: Frame_Content_Size_flag 2 (a 4-byte size),
	// Single_Segment_flag (no window descriptor: the window is the content
	// size), no checksum, no dictionary.
	zstdRawFHD = 2<<6 | 1<<5
)

// appendRawFrame appends a zstd frame holding b in raw blocks. An empty b
// appends nothing.
func appendRawFrame(dst, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = binary.LittleEndian.AppendUint32(dst, zstdMagic)
	dst = append(dst, zstdRawFHD)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	for len(b) > 0 {
		n := min(len(b), zstdMaxBlock)
		last := uint32(0)
		if n == len(b) {
			last = 1
		}
		h := last | uint32(n)<<3 // Block_Type 0: Raw_Block
		dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
		dst = append(dst, b[:n]...)
		b = b[n:]
	}
	return dst
}
