// Package opfile reads the files an operator points the edge at (the key
// file, the TLS certificate and key) under docs/contract.md section 15: only regular files
// (after following links), only up to a bound, and never blocking.
package opfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Bounds of docs/contract.md section 15.
const (
	MaxKeyFile = 16 << 20 // the key file
	MaxTLSFile = 1 << 20  // the TLS certificate, and its key
)

// Errors of Read, beside the file system's own.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// Read returns the content of the regular file at path (links followed),
// or an error when it is anything else (a FIFO, a device such as
// /dev/zero, a directory, a socket) or larger than limit bytes.
//
// It never blocks on what path names: the file is checked with stat before
// opening (so a device is not even opened), opened with O_NONBLOCK (a FIFO
// swapped in between stat and open does not wait for a writer), then
// checked again on the open descriptor, and read through a limit (a file
// that grows while read stops at limit+1 bytes).
func Read(path string, limit int64) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if err := check(fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(fi, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

func check(fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), limit)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
