package keys

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkPerm looks at who may change the key file at path (docs/contract.md
// section 22). Whoever can write the file, or replace it in its directory,
// can add a key of their own: a file, or a directory, writable by group or
// others is refused (err). A file readable by others gives a warning (its
// digests and grants are not for everyone) but loads.
//
// The directories are the one path names and, when path is a symbolic link
// (a Kubernetes Secret's ..data/keys.json), the one holding its target. A
// directory with the sticky bit (/tmp, the root of a Kubernetes Secret
// volume, mode 1777) lets no one but a file's owner rename or remove it, so
// its write bits are no threat to a file someone else owns.
func checkPerm(path string) (warning string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil // readFile says why
	}
	mode := fi.Mode().Perm()
	if mode&0o022 != 0 {
		return "", fmt.Errorf("key file %s has mode %04o: writable by group or others, who could add a key of their own; refused (chmod 600 %[1]s, or 640 for a group that only reads it)", path, mode)
	}
	dirs := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, dir := range dirs {
		di, err := os.Stat(dir)
		if err != nil {
			continue
		}
		if dm := di.Mode(); dm.Perm()&0o022 != 0 && dm&fs.ModeSticky == 0 {
			return "", fmt.Errorf("key file %s is in directory %s of mode %04o: writable by group or others, who could replace the file; refused (chmod go-w %[2]s)", path, dir, dm.Perm())
		}
	}
	if mode&0o004 != 0 {
		return fmt.Sprintf("key file %s has mode %04o: readable by others (chmod o-r %[1]s)", path, mode), nil
	}
	return "", nil
}
