package archcheck

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documents a newcomer reads: every link in them opens, every anchor
// names a heading, and every repository path they cite exists. GitHub
// renders them, so anchors are GitHub's slugs of the headings.
func docFiles(tracked []string) []string {
	files := []string{"README.md"}
	for _, f := range tracked {
		for _, pattern := range []string{"docs/*.md", "docs/deploy/*.md"} {
			if ok, _ := path.Match(pattern, f); ok {
				files = append(files, f)
			}
		}
	}
	return files
}

// trackedPaths is every file git tracks and every directory holding one:
// what a fresh clone has. A document citing anything else (a build's
// output, a git-ignored file) cites what a newcomer does not have.
func trackedPaths(tracked []string) map[string]bool {
	paths := map[string]bool{".": true}
	for _, f := range tracked {
		for p := f; p != "." && p != "/" && !paths[p]; p = path.Dir(p) {
			paths[p] = true
		}
	}
	return paths
}

var (
	// inlineLink is [text](target) or ![alt](target), target up to the
	// first space or closing parenthesis (a title may follow).
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink is a reference definition: [name]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// htmlAnchor is an explicit anchor in HTML.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// codeSpan is inline code; repoPath is what in it reads as a path of
	// this repository (a top-level directory, then more).
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	repoPath = regexp.MustCompile(`^(?:\./)?((?:cmd|edge|upstream|mapping|problem|observability|bench|docs|\.ci)/[A-Za-z0-9_./-]*)$`)
	// goIdent is the last element of a package path with an identifier.
	goIdent = regexp.MustCompile(`^[a-z0-9_]+\.[A-Z]`)
	// trackerRef is a reference to an issue tracker the repository does
	// not have: the word followed by a number, as trackers number them.
	trackerRef = regexp.MustCompile(`(?i)\bissues?\s+#?[0-9]`)
	// trackerSplit is one split over two comment lines.
	trackerSplit = regexp.MustCompile("(?i)\\bissues?[ \t]*\n[ \t]*(?://|#)?[ \t]*#?[0-9]")
)

// docLine is one line of a document outside fenced code blocks.
type docLine struct {
	n    int
	text string
}

// prose returns a document's lines outside ``` fences.
func prose(data string) []docLine {
	var out []docLine
	fenced := false
	for i, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, docLine{i + 1, line})
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: inline links reduced to their
// text, lower case, everything but letters, digits, spaces, hyphens and
// underscores dropped, spaces turned into hyphens.
func slug(heading string) string {
	heading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors lists a Markdown document's anchors: its headings' slugs (a
// repeated slug gets -1, -2, ... as on GitHub) and explicit HTML anchors.
func anchors(data string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(data) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
		t := strings.TrimLeft(l.text, "#")
		if len(t) == len(l.text) || len(l.text)-len(t) > 6 || !strings.HasPrefix(t, " ") {
			continue
		}
		s := slug(strings.TrimRight(strings.TrimSpace(t), "#"))
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocLinks fails on a relative link in README.md or docs/ that names
// no file, an anchor that names no heading, and a repository path in
// inline code that does not exist. What exists is what git tracks
// (git ls-files), not what is on this disk: a fresh clone has no build
// output (.ci/jaeger/bin/...), so a document citing one fails here even
// on the machine that built it.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(data))
		return cache[path], nil
	}
	tracked := trackedFiles(t, root)
	exists := trackedPaths(tracked)
	checked := 0
	for _, f := range docFiles(tracked) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range prose(string(data)) {
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(l.text, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(l.text); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				resolved := f
				if path != "" {
					resolved = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
					if !exists[resolved] {
						t.Errorf("%s:%d links %s, which git does not track (%s)", f, l.n, target, resolved)
						continue
					}
				}
				if anchor == "" {
					if path != "" && resolved == f {
						t.Errorf("%s:%d links %s, which is this file", f, l.n, target)
					}
					continue
				}
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s:%d links %s: an anchor in a file that is not Markdown", f, l.n, target)
					continue
				}
				a, err := anchorsOf(resolved)
				if err != nil {
					t.Fatal(err)
				}
				if !a[anchor] {
					t.Errorf("%s:%d links %s: %s has no heading #%s", f, l.n, target, resolved, anchor)
				}
			}
			for _, m := range codeSpan.FindAllStringSubmatch(l.text, -1) {
				p := repoPath.FindStringSubmatch(strings.TrimSpace(m[1]))
				if p == nil {
					continue
				}
				path := strings.TrimSuffix(strings.TrimSuffix(p[1], "..."), "/")
				// edge/listener.Serve names a package's identifier.
				if i := strings.LastIndexByte(path, '/'); goIdent.MatchString(path[i+1:]) {
					path = path[:i+1] + path[i+1:][:strings.IndexByte(path[i+1:], '.')]
				}
				checked++
				if !exists[path] {
					t.Errorf("%s:%d cites `%s`, which git does not track (a build's output or a missing file)", f, l.n, m[1])
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links and paths checked: the parser is not finding them", checked)
	}
}

// TestNoTrackerReferences fails on "issue N" in any tracked source or
// document: the repository has no issue tracker, so a reason must be said
// or a docs/ file cited instead.
func TestNoTrackerReferences(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range trackedFiles(t, root) {
		if !textual(f) && !strings.HasPrefix(f, "bench/results/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := trackerRef.FindString(line); m != "" {
				t.Errorf("%s:%d says %q: the repository has no issue tracker; say what it means or cite docs/", f, i+1, line)
			}
		}
		for _, loc := range trackerSplit.FindAllIndex(data, -1) {
			line := 1 + strings.Count(string(data[:loc[0]]), "\n")
			t.Errorf("%s:%d says %q over two lines: the repository has no issue tracker", f, line, data[loc[0]:loc[1]])
		}
	}
}

// TestSlug pins the anchors the link check expects to GitHub's.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Where the code differs from the first design":         "where-the-code-differs-from-the-first-design",
		"The PMS path, third round (2026-11-25, evening)":      "the-pms-path-third-round-2026-11-25-evening",
		"1. The PMS over HTTP/1.1 (`upstream/x.go`): -15%":     "1-the-pms-over-http11-upstreamxgo--15",
		"Who can write to Redis (docs/contract.md section 15)": "who-can-write-to-redis-docscontractmd-section-15",
		"See [the table](#x) now":                              "see-the-table-now",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestReadmeFrontDoor holds README.md to a front door (docs/testing.md):
// at most 150 lines, the two commands first (the demo, the tests), the
// programs installed before anything calls them by name, and a path into
// docs/ for each reader. Everything else lives in docs/.
func TestReadmeFrontDoor(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README.md has %d lines, want at most 150: move the rest into docs/", n)
	}
	_, first, _ := strings.Cut(readme, "```sh\n")
	first, _, _ = strings.Cut(first, "```")
	if !strings.HasPrefix(first, "go run ./cmd/edge ") || !strings.Contains(first, "\ngo test ./... ") {
		t.Errorf("README.md's first block is %q, want the two commands: go run ./cmd/edge, then go test ./...", first)
	}
	install := strings.Index(readme, "go install ./cmd/edge")
	if install < 0 {
		t.Error("README.md does not say how to install edge (go install ./cmd/edge)")
	}
	at := 0
	for i, line := range strings.SplitAfter(readme, "\n") { // code blocks included: that is where commands are
		if cmd := strings.TrimSpace(line); (strings.HasPrefix(cmd, "edge ") || strings.HasSuffix(cmd, " edge")) && at < install {
			t.Errorf("README.md:%d calls edge before saying how to install it", i+1)
		}
		at += len(line)
	}
	for _, reader := range []string{"**Partners**", "**Operators**", "**SREs**", "**Backend teams**"} {
		if !strings.Contains(readme, reader) {
			t.Errorf("README.md has no path for %s", reader)
		}
	}
}
