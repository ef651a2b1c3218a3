package sqlq

import (
	"bufio"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Statements are the named statements of a set of .sql files.
//
// A file holds any number of statements, each introduced by a line
// "-- name: NAME" and then at least one comment line that says what it
// does and why it is written so, then its SQL, up to the next name line:
//
//	-- name: forget_key
//	-- Deletes a key past its TTL, unless a request renewed it meanwhile.
//	DELETE FROM idempotency_keys WHERE id = $1 AND created_at < $2
//
// Names are unique across the set.
type Statements struct {
	byName map[string]string
}

var nameLine = regexp.MustCompile(`^--\s*name:\s*([a-z][a-z0-9_]*)\s*$`)

// Load reads every file of fsys that matches one of patterns (fs.Glob):
// typically a dialect's own file and the statements both dialects share.
// It fails on a pattern that matches nothing, a statement without a
// comment, an empty one, a duplicate name, or text before the first name.
func Load(fsys fs.FS, patterns ...string) (Statements, error) {
	var files []string
	for _, p := range patterns {
		matched, err := fs.Glob(fsys, p)
		if err != nil {
			return Statements{}, err
		}
		if len(matched) == 0 {
			return Statements{}, fmt.Errorf("sqlq: no file matches %q", p)
		}
		files = append(files, matched...)
	}
	sort.Strings(files)
	files = slices.Compact(files)
	s := Statements{byName: map[string]string{}}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return Statements{}, err
		}
		if err := s.parse(f, string(b)); err != nil {
			return Statements{}, err
		}
	}
	return s, nil
}

// MustLoad is Load for statements embedded in the binary, which are known
// when it is built: it panics on an error, and a package's tests load its
// statements, so that no broken file gets that far.
func MustLoad(fsys fs.FS, patterns ...string) Statements {
	s, err := Load(fsys, patterns...)
	if err != nil {
		panic(err)
	}
	return s
}

func (s Statements) parse(file, text string) error {
	var name string
	var commented bool
	var body strings.Builder
	line := 0
	finish := func() error {
		if name == "" {
			return nil
		}
		sql := strings.TrimSpace(body.String())
		switch {
		case !commented:
			return fmt.Errorf("sqlq: %s: statement %s has no comment saying what it does", file, name)
		case sql == "":
			return fmt.Errorf("sqlq: %s: statement %s is empty", file, name)
		}
		if _, dup := s.byName[name]; dup {
			return fmt.Errorf("sqlq: %s: statement %s is defined twice", file, name)
		}
		s.byName[name] = sql
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line++
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		if m := nameLine.FindStringSubmatch(trimmed); m != nil {
			if err := finish(); err != nil {
				return err
			}
			name, commented = m[1], false
			body.Reset()
			continue
		}
		if name == "" {
			if trimmed == "" || strings.HasPrefix(trimmed, "--") {
				continue // the file's own header
			}
			return fmt.Errorf("sqlq: %s:%d: SQL before the first \"-- name:\" line", file, line)
		}
		if body.Len() == 0 && strings.HasPrefix(trimmed, "--") {
			commented = true
			continue
		}
		if body.Len() == 0 && trimmed == "" {
			continue
		}
		body.WriteString(l)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sqlq: %s: %w", file, err)
	}
	return finish()
}

// SQL is the statement called name. It panics when there is none: names
// are constants of the package that loads the statements, and its tests
// run every one.
func (s Statements) SQL(name string) string {
	q, ok := s.byName[name]
	if !ok {
		panic(fmt.Sprintf("sqlq: no statement %q", name))
	}
	return q
}

// Names lists the statements, sorted.
func (s Statements) Names() []string {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
