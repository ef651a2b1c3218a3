package docs_test

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// allowed names what a comment or a document may name although the tree
// does not hold it, each with the reason.
var allowed = map[string]string{
	"patroni.yml": "the name of Patroni's own configuration file, shown as an example in docs/operations/high-availability.md",
}

var (
	// A repository file: a word of path characters ending in one of the
	// extensions this repository's files have. The character before it
	// must not make it a pattern (*.sql, %s.sql, {name}.go) or a URL path
	// (/api/openapi.json).
	fileRef = regexp.MustCompile(`(^|[^\w./*%{<$-])((?:\.{1,2}/)*[\w-][\w.-]*(?:/[\w.-]+)*\.(?:go|sql|sh|templ|graphqls|yml|yaml|jsx|mjs|md))\b`)
	// A test, benchmark or fuzz target: Test, Benchmark or Fuzz and a word
	// that starts with a capital letter.
	testRef = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z]\w*)`)
	// A Markdown link to something relative: [text](target) or
	// [text](target#anchor), not a URL and not an anchor alone.
	linkRef = regexp.MustCompile(`\]\(([^)#\s:]+)(?:#([^)\s]*))?\)`)
	// A Markdown link to a heading of the same document: [text](#anchor).
	anchorRef = regexp.MustCompile(`\]\(#([^)\s]+)\)`)
	// A Markdown heading, outside fenced blocks.
	heading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*$`)
)

// TestPointersNameWhatExists fails when a Go comment or a Markdown file
// names a repository file or a test that the tree does not hold, or when
// a Markdown link does not lead to a file or folder, or to a heading that
// its document has.
func TestPointersNameWhatExists(t *testing.T) {
	t.Parallel()
	tr := readTree(t)
	anchors := map[string]map[string]bool{}
	for _, md := range tr.markdown {
		anchors[md.file] = headingAnchors(md.body)
	}
	var broken []string
	report := func(x text, format string, args ...any) {
		broken = append(broken, fmt.Sprintf("%s:%d: %s", x.file, x.line, fmt.Sprintf(format, args...)))
	}
	check := func(x text) {
		for _, m := range fileRef.FindAllStringSubmatch(x.body, -1) {
			if ref := m[2]; !isModulePath(ref) && !tr.hasFile(x.file, ref) {
				report(x, "names the file %s, which the repository does not hold", ref)
			}
		}
		for _, m := range testRef.FindAllStringSubmatch(x.body, -1) {
			if name := m[1]; !tr.declared[name] && allowed[name] == "" {
				report(x, "names the test %s, which no Go file declares", name)
			}
		}
	}
	for _, c := range tr.comments {
		check(c)
	}
	for _, md := range tr.markdown {
		for i, line := range strings.Split(md.body, "\n") {
			x := text{file: md.file, line: i + 1, body: line}
			check(x)
			for _, m := range linkRef.FindAllStringSubmatch(line, -1) {
				target := path.Clean(path.Join(path.Dir(md.file), m[1]))
				if !tr.files[target] && !tr.dirs[target] && allowed[target] == "" {
					report(x, "links to %s, which is not %s", m[1], target+" in the repository")
				}
				if a, ok := anchors[target]; ok && m[2] != "" && !a[m[2]] {
					report(x, "links to %s#%s, a heading %s does not have", m[1], m[2], target)
				}
			}
			for _, m := range anchorRef.FindAllStringSubmatch(line, -1) {
				if !anchors[md.file][m[1]] {
					report(x, "links to #%s, a heading this document does not have", m[1])
				}
			}
		}
	}
	sort.Strings(broken)
	for _, b := range broken {
		t.Error(b)
	}
}

// headingAnchors is the anchors GitHub gives a Markdown document's
// headings: each heading's text in lower case, without punctuation, spaces
// made hyphens, and -1, -2… after a repeated one. A line in a fenced block
// (a shell comment) is no heading.
func headingAnchors(body string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// slug is a heading's anchor, as GitHub makes it.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isModulePath reports a path whose first folder is a host name
// (github.com/owner/repo/file.go): another repository's file.
func isModulePath(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	return ok && first != "." && first != ".." && strings.Contains(first, ".")
}

// hasFile reports whether a reference made in file from names a file of the
// repository: as a path from the root or from from's folder, as the end of
// a path (sql/create_batch.sql), or, written without a folder, as any
// file's name. A reference may be loose; a name that is nowhere is wrong.
func (tr *tree) hasFile(from, ref string) bool {
	if allowed[ref] != "" {
		return true
	}
	clean := path.Clean(ref)
	if allowed[path.Join(path.Dir(from), clean)] != "" {
		return true
	}
	if tr.files[clean] || tr.files[path.Join(path.Dir(from), clean)] {
		return true
	}
	if !strings.Contains(clean, "/") {
		return tr.basename[clean]
	}
	for f := range tr.files {
		if strings.HasSuffix(f, "/"+clean) {
			return true
		}
	}
	return false
}

// TestPointerMatcher pins what the matcher takes for a pointer and what it
// leaves alone, so that a change to it cannot silently check nothing.
func TestPointerMatcher(t *testing.T) {
	t.Parallel()
	files := func(s string) []string {
		var out []string
		for _, m := range fileRef.FindAllStringSubmatch(s, -1) {
			out = append(out, m[2])
		}
		return out
	}
	cases := []struct {
		in   string
		want []string
	}{
		{"the path every request takes is payments/engine.go.", []string{"payments/engine.go"}},
		{"(store_test.go) and `sql/create_batch.sql`", []string{"store_test.go", "sql/create_batch.sql"}},
		{"[the engine](../../payments/engine.go)", []string{"../../payments/engine.go"}},
		{"every sql/*.sql file, %s.sql, GET /api/openapi.json", nil},
		{"https://github.com/owner/repo/blob/main/x.go and the *_templ.go files", nil},
		{"cmpay.db, 10.5, v1.2.3 and example.com", nil},
		{"github.com/ncruces/go-sqlite3/driver/driver.go", []string{"github.com/ncruces/go-sqlite3/driver/driver.go"}},
	}
	for _, c := range cases {
		if got := files(c.in); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("files in %q: got %q, want %q", c.in, got, c.want)
		}
	}
	if got := testRef.FindAllString("TestFailover (failover_test.go), BenchmarkCreate/sqlite; Testing, testify", -1); strings.Join(got, " ") != "TestFailover BenchmarkCreate" {
		t.Errorf("tests: got %q", got)
	}
	if !isModulePath("github.com/ncruces/go-sqlite3/driver/driver.go") || isModulePath("../payments/engine.go") {
		t.Error("isModulePath")
	}
	doc := "# Title\n## The Stripe test double (`internal/stripedouble`)\n```sh\n# a comment\n```\n### Tests\n## Tests\n"
	got := headingAnchors(doc)
	for a, want := range map[string]bool{"title": true, "the-stripe-test-double-internalstripedouble": true,
		"tests": true, "tests-1": true, "a-comment": false} {
		if got[a] != want {
			t.Errorf("anchor %q: got %v, want %v (anchors %v)", a, got[a], want, got)
		}
	}
	tr := readTree(t)
	for ref, want := range map[string]bool{
		"payments/engine.go": true, "sql/create_batch.sql": true, "engine.go": true,
		"nothing_test.go": false, "payments/nothing.go": false, "sql/engine.go": false,
	} {
		if got := tr.hasFile("payments/decide.go", ref); got != want {
			t.Errorf("hasFile(%q) = %v, want %v", ref, got, want)
		}
	}
}
