package opfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Regular files within the bound are read; links to /dev/zero, FIFOs
// (without blocking), directories and oversized files are refused.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(good, 5); err != nil || string(b) != "hello" {
		t.Errorf("regular file: %q, %v", b, err)
	}
	if _, err := Read(good, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the bound: %v; want ErrTooLarge", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(link, 5); err != nil || string(b) != "hello" {
		t.Errorf("link to a regular file: %q, %v", b, err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(zero, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Errorf("link to /dev/zero: %v; want ErrNotRegular", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(fifo, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("FIFO: %v; want ErrNotRegular", err)
	}
	if _, err := Read(dir, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v; want ErrNotRegular", err)
	}
	if _, err := Read(filepath.Join(dir, "absent"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
}
