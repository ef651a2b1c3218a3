package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: the tests expect to run from tests/docs", root)
	}
	return root
}

// tree is what the repository holds: its files, and the comments and
// declared names of its Go files.
type tree struct {
	root     string
	files    map[string]bool // slash paths relative to root
	dirs     map[string]bool
	basename map[string]bool
	declared map[string]bool // top-level functions and types of every Go file
	comments []text          // every Go comment
	markdown []text          // every Markdown file, whole
}

// text is something a reader reads, with the file it is in.
type text struct {
	file string // slash path relative to root
	line int
	body string
}

// skipDir reports the folders whose files are not the project's own:
// version control, npm's downloads, hidden tool state.
func skipDir(name string) bool {
	return name == "node_modules" || (strings.HasPrefix(name, ".") && name != ".")
}

var (
	treeOnce sync.Once
	theTree  *tree
	treeErr  error
)

// readTree walks the repository, once for all the tests.
func readTree(t testing.TB) *tree {
	t.Helper()
	root := repoRoot(t)
	treeOnce.Do(func() { theTree, treeErr = walkTree(root) })
	if treeErr != nil {
		t.Fatal(treeErr)
	}
	return theTree
}

// generated matches the line Go's convention puts in generated files
// (gqlgen's, templ's): their comments are not written by us.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func walkTree(root string) (*tree, error) {
	tr := &tree{root: root, files: map[string]bool{}, dirs: map[string]bool{},
		basename: map[string]bool{}, declared: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(tr.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tr.root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			tr.dirs[rel] = true
			return nil
		}
		tr.files[rel] = true
		tr.basename[d.Name()] = true
		inTestdata := strings.Contains("/"+rel, "/testdata/")
		switch {
		case inTestdata:
		case strings.HasSuffix(rel, ".md"):
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			tr.markdown = append(tr.markdown, text{file: rel, line: 1, body: string(raw)})
		case strings.HasSuffix(rel, ".go"):
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			mode := parser.ParseComments | parser.SkipObjectResolution
			if generated.Match(src) {
				mode = parser.SkipObjectResolution // its declarations count, not its comments
			}
			f, err := parser.ParseFile(fset, path, src, mode)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				switch decl := decl.(type) {
				case *ast.FuncDecl:
					if decl.Recv == nil {
						tr.declared[decl.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, spec := range decl.Specs {
						if ts, ok := spec.(*ast.TypeSpec); ok {
							tr.declared[ts.Name.Name] = true
						}
					}
				}
			}
			for _, group := range f.Comments {
				tr.comments = append(tr.comments, text{file: rel, line: fset.Position(group.Pos()).Line, body: group.Text()})
			}
		}
		return nil
	})
	return tr, err
}
