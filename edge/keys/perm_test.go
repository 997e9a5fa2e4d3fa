package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// docs/contract.md section 22: a key file, or its directory, writable by
// group or others is refused (naming the file and the mode); one readable
// by others loads with a warning; a sticky directory (a Kubernetes Secret
// volume's root) is no threat.
func TestKeyFileModes(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	for _, c := range []struct {
		name            string
		file, dir       os.FileMode
		linked          bool   // the file is a symbolic link into dir/data (0755)
		refused, warned string // in the error, in the warning; "": none
	}{
		{name: "0600", file: 0o600, dir: 0o700},
		{name: "0640", file: 0o640, dir: 0o750},
		{name: "0644", file: 0o644, dir: 0o755, warned: "has mode 0644: readable by others"},
		{name: "0666", file: 0o666, dir: 0o700, refused: "has mode 0666: writable by group or others"},
		{name: "0620", file: 0o620, dir: 0o700, refused: "has mode 0620"},
		{name: "0602", file: 0o602, dir: 0o700, refused: "has mode 0602"},
		{name: "dir 0777", file: 0o600, dir: 0o777, refused: "of mode 0777: writable by group or others"},
		{name: "dir 0770", file: 0o600, dir: 0o770, refused: "of mode 0770"},
		{name: "dir 1777", file: 0o600, dir: 0o777 | os.ModeSticky},
		{name: "secret volume", file: 0o440, dir: 0o777 | os.ModeSticky, linked: true},
		{name: "link target's dir 0777", file: 0o600, dir: 0o700, linked: true, refused: "of mode 0777"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "keys")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path, real := filepath.Join(dir, "keys.json"), filepath.Join(dir, "keys.json")
			if c.linked {
				data := filepath.Join(dir, "..data")
				if err := os.Mkdir(data, 0o755); err != nil {
					t.Fatal(err)
				}
				real = filepath.Join(data, "keys.json")
				if err := os.Symlink("..data/keys.json", path); err != nil {
					t.Fatal(err)
				}
				if c.name == "link target's dir 0777" {
					if err := os.Chmod(data, 0o777); err != nil {
						t.Fatal(err)
					}
				}
			}
			writeFile(t, real, marshalFile(t, rec))
			if err := os.Chmod(real, c.file); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, c.dir); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
			log, buf := newLogger()
			s, err := Open(path, Options{Logger: log})
			// edge keys list refuses what the edge refuses, as every
			// other command does.
			_, listErr := Editor{Path: path, Now: time.Now}.List()
			switch {
			case c.refused != "":
				if err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Open: %v; want a refusal naming %s and %q", err, path, c.refused)
				}
				if listErr == nil || !strings.Contains(listErr.Error(), c.refused) {
					t.Errorf("List: %v; want the refusal %q", listErr, c.refused)
				}
				return
			case err != nil:
				t.Fatalf("Open: %v", err)
			case listErr != nil:
				t.Errorf("List: %v", listErr)
			}
			if s.Len() != 1 {
				t.Fatalf("%d keys", s.Len())
			}
			warned := strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "readable by others")
			if c.warned != "" && (!warned || !strings.Contains(buf.String(), c.warned)) {
				t.Errorf("no warning %q:\n%s", c.warned, buf)
			}
			if c.warned == "" && warned {
				t.Errorf("warned:\n%s", buf)
			}
		})
	}
}

// A reload of a file made writable by others is refused and logged; the
// keys in force stay, and the file loads again once its mode is fixed.
func TestReloadRefusesWritableFile(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	_, rec2 := minted(t, 2, ModeLive, nil)
	path := keyFile(t, rec)
	log, buf := newLogger()
	var outcomes []bool
	s, err := Open(path, Options{Logger: log, OnReload: func(ok bool) { outcomes = append(outcomes, ok) }})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, marshalFile(t, rec, rec2))
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	err = s.Reload()
	if err == nil || !strings.Contains(err.Error(), "mode 0666") || s.Len() != 1 {
		t.Fatalf("Reload: %v, %d keys; want refused, 1 key in force", err, s.Len())
	}
	if !strings.Contains(buf.String(), "keys reload failed") || !strings.Contains(buf.String(), "mode 0666") {
		t.Errorf("refusal not logged:\n%s", buf)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil || s.Len() != 2 {
		t.Fatalf("Reload after chmod 600: %v, %d keys", err, s.Len())
	}
	if len(outcomes) != 2 || outcomes[0] || !outcomes[1] {
		t.Errorf("OnReload outcomes %v; want [false true]", outcomes)
	}
}
