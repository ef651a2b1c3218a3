package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The convention the documents follow (docs/README.md says it too): a
// block fenced as ```sh is an example, run with bash against a running
// server, the blocks of one file in order in one shell, so that a variable
// one block sets is there for the next. A ```json block right after it
// (nothing but blank lines between) is the answer it prints. Commands not
// to be run here (starting the server, the test script) are fenced as
// ```console, and answers that are not JSON as ```text or ```http.

// block is one fenced block of a Markdown file.
type block struct {
	line int    // of the opening fence
	lang string // what follows the fence: sh, json, console…
	body string
	// expect is the ```json block that follows an sh block, if any.
	expect *block
}

// An opening fence, indented or not (inside a list), and its language.
var fence = regexp.MustCompile("^\\s*```" + `(\S*)\s*$`)

// parseBlocks returns a Markdown file's fenced blocks, in order, each sh
// block with the JSON answer that follows it.
func parseBlocks(markdown string) ([]*block, error) {
	var blocks []*block
	var open *block
	var body []string
	gap := true // only blank lines since the last block closed
	for i, line := range strings.Split(markdown, "\n") {
		if open != nil {
			if strings.TrimSpace(line) == "```" {
				open.body = strings.Join(body, "\n")
				if n := len(blocks); open.lang == "json" && gap && n > 0 && blocks[n-1].lang == "sh" {
					blocks[n-1].expect = open
				} else {
					blocks = append(blocks, open)
				}
				open, body, gap = nil, nil, true
				continue
			}
			body = append(body, line)
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			open = &block{line: i + 1, lang: m[1]}
			continue
		}
		if strings.TrimSpace(line) != "" {
			gap = false
		}
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: a block is opened and never closed", open.line)
	}
	return blocks, nil
}

// problem is something wrong with one example.
type problem struct {
	line int
	msg  string
}

// runExamples runs the sh blocks of one Markdown file against s in one
// bash, in order, and reports every block that failed or printed another
// answer than the one shown. A failed block ends the file's run: the
// blocks after it may need what it did.
func runExamples(t *testing.T, s *server, blocks []*block) []problem {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	var examples []*block
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		n := len(examples)
		examples = append(examples, b)
		name := filepath.Join(dir, strconv.Itoa(n))
		if err := os.WriteFile(name+".sh", []byte(b.body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "echo %d > %q\nsource %q > %q 2> %q\n", n, filepath.Join(dir, "started"),
			name+".sh", name+".out", name+".err")
	}
	if len(examples) == 0 {
		return nil
	}
	fmt.Fprintf(&script, "echo done > %q\n", filepath.Join(dir, "started"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	// The environment the docs assume a reader has; PASSPHRASE stands for
	// a password the reader's secret store would give.
	cmd.Env = append(os.Environ(), "PATH="+s.bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CMPAY_URL="+s.url, "CMPAY_TOKEN="+exampleToken, "DATABASE_URL="+s.dbURL, "PASSPHRASE=a passphrase of the examples")
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()

	var problems []problem
	started, _ := os.ReadFile(filepath.Join(dir, "started"))
	last, _ := strconv.Atoi(strings.TrimSpace(string(started)))
	if runErr == nil {
		last = len(examples) - 1
	}
	for n, b := range examples {
		name := filepath.Join(dir, strconv.Itoa(n))
		out, _ := os.ReadFile(name + ".out")
		errOut, _ := os.ReadFile(name + ".err")
		switch {
		case n > last:
			problems = append(problems, problem{b.line, "not run: an earlier example failed"})
			continue
		case n == last && runErr != nil:
			problems = append(problems, problem{b.line, fmt.Sprintf("failed (%v)\nstdout:\n%s\nstderr:\n%s", runErr, out, errOut)})
			continue
		}
		if b.expect != nil {
			if err := sameAnswer(b.expect.body, out); err != nil {
				problems = append(problems, problem{b.line, fmt.Sprintf("printed another answer than the one shown at line %d: %v\nstdout:\n%s",
					b.expect.line, err, out)})
			}
		}
	}
	return problems
}

// sameAnswer compares what an example printed with the JSON shown after
// it: the same documents, the same fields, the same values, except what
// differs from run to run (see normalise).
func sameAnswer(shown string, printed []byte) error {
	want, err := decodeAll([]byte(shown))
	if err != nil {
		return fmt.Errorf("the answer shown is not JSON: %w", err)
	}
	got, err := decodeAll(printed)
	if err != nil {
		return fmt.Errorf("the example did not print JSON: %w", err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d JSON documents printed, %d shown", len(got), len(want))
	}
	for i := range want {
		if err := sameJSON("$", want[i], got[i]); err != nil {
			return err
		}
	}
	return nil
}

func decodeAll(raw []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, v)
	}
}

// sameJSON compares want (from the document) with got (from the server).
func sameJSON(at string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an object is shown, %s printed", at, kind(got))
		}
		var missing, extra []string
		for k := range w {
			if _, ok := g[k]; !ok {
				missing = append(missing, k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				extra = append(extra, k)
			}
		}
		if len(missing)+len(extra) > 0 {
			sort.Strings(missing)
			sort.Strings(extra)
			return fmt.Errorf("%s: fields shown but not printed %q, printed but not shown %q", at, missing, extra)
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := sameJSON(at+"."+k, w[k], g[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: an array is shown, %s printed", at, kind(got))
		}
		if len(g) != len(w) {
			return fmt.Errorf("%s: %d items shown, %d printed", at, len(w), len(g))
		}
		for i := range w {
			if err := sameJSON(fmt.Sprintf("%s[%d]", at, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	case string:
		g, ok := got.(string)
		if !ok {
			return fmt.Errorf("%s: a string is shown, %s printed", at, kind(got))
		}
		if !matches(w, g) {
			return fmt.Errorf("%s: %q shown, %q printed", at, w, g)
		}
		return nil
	default: // numbers, booleans, null
		if fmt.Sprint(want) != fmt.Sprint(got) || kind(want) != kind(got) {
			return fmt.Errorf("%s: %v shown, %v printed", at, want, got)
		}
		return nil
	}
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

var (
	// What differs from run to run: identifiers CMPay makes up, times,
	// secrets.
	madeUpID  = regexp.MustCompile(`\b(pay|ref|tok|we|wd)_[0-9A-HJKMNP-TV-Z]{26}\b`)
	timestamp = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)`)
	secret    = regexp.MustCompile(`\bwhsec_[\w-]{20,}`)
)

// normalise replaces what differs from run to run by its kind, so that a
// document may show a real answer.
func normalise(s string) string {
	s = madeUpID.ReplaceAllString(s, "${1}_<id>")
	s = timestamp.ReplaceAllString(s, "<time>")
	return secret.ReplaceAllString(s, "whsec_<secret>")
}

// matches compares a string shown with one printed, once normalised; in
// the string shown, … stands for any text (an event id, a count).
func matches(shown, printed string) bool {
	shown, printed = normalise(shown), normalise(printed)
	parts := strings.Split(shown, "…")
	if len(parts) == 1 {
		return shown == printed
	}
	var pattern strings.Builder
	pattern.WriteString("^")
	for i, p := range parts {
		if i > 0 {
			pattern.WriteString("(?s:.*)")
		}
		pattern.WriteString(regexp.QuoteMeta(p))
	}
	pattern.WriteString("$")
	return regexp.MustCompile(pattern.String()).MatchString(printed)
}

// TestExamples runs every example of README.md and docs/ against a server
// built from this checkout and checks each answer shown; then it runs
// examples that are wrong on purpose and checks that each is reported.
func TestExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "grep", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the examples need %s: %v", tool, err)
		}
	}
	tr := readTree(t)
	s := startServer(t)
	// A file that needs the server configured otherwise says so on its
	// first line (<!-- examples run with: NAME=value … -->) and gets a
	// server of its own.
	servers := map[string]*server{"": s}
	for _, md := range tr.markdown {
		if env := exampleEnv(md.body); servers[env] == nil {
			servers[env] = startServer(t, strings.Fields(env)...)
		}
	}
	// The files run at once, each in its own shell: no example may depend
	// on another file's, or on what the others have done to the server.
	t.Run("documents", func(t *testing.T) {
		for _, md := range tr.markdown {
			blocks, err := parseBlocks(md.body)
			if err != nil {
				t.Errorf("%s: %v", md.file, err)
				continue
			}
			if !slices.ContainsFunc(blocks, func(b *block) bool { return b.lang == "sh" }) {
				continue
			}
			t.Run(md.file, func(t *testing.T) {
				t.Parallel()
				for _, p := range runExamples(t, servers[exampleEnv(md.body)], blocks) {
					t.Errorf("%s:%d: %s", md.file, p.line, p.msg)
				}
			})
		}
	})
	t.Run("broken examples are reported", func(t *testing.T) { checkBrokenExamples(t, s) })
	if t.Failed() {
		log, _ := os.ReadFile(s.stderr)
		t.Logf("the server's log:\n%s", tail(log, 40))
	}
}

var envLine = regexp.MustCompile(`^<!-- examples run with: ((?:[A-Z_]+=\S+ ?)+) -->`)

// exampleEnv is the environment a Markdown file's first line asks its
// examples' server for, "" for none.
func exampleEnv(body string) string {
	if m := envLine.FindStringSubmatch(body); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

func tail(b []byte, lines int) string {
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// checkBrokenExamples runs testdata/broken.md, whose examples are wrong on
// purpose, each marked with what must be said of it: an answer that
// differs from the one shown, a command that fails, and what comes after.
func checkBrokenExamples(t *testing.T, s *server) {
	raw, err := os.ReadFile(filepath.Join("testdata", "broken.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for _, p := range runExamples(t, s, blocks) {
		got[p.line] = p.msg
	}
	want := map[int]string{} // the line of each example's fence, and what must be said of it
	for i, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "<!-- expect: "); ok {
			want[i+2] = strings.TrimSuffix(rest, " -->") // the fence is on the next line
		}
	}
	if len(want) == 0 {
		t.Fatal("testdata/broken.md marks no example")
	}
	for line, msg := range want {
		if !strings.Contains(got[line], msg) {
			t.Errorf("line %d: want a problem containing %q, got %q", line, msg, got[line])
		}
	}
	for line, msg := range got {
		if _, ok := want[line]; !ok {
			t.Errorf("line %d: unexpected problem %q", line, msg)
		}
	}
}
