// Package sqlqtest checks a package's statements from its tests.
package sqlqtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// AllUsed fails t for every statement of sets that no Go file of the
// package under test (its directory, tests left out) names as SQL("name"):
// a statement nothing runs is one nothing tests either.
func AllUsed(t testing.TB, sets ...sqlq.Statements) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, s := range sets {
		for _, name := range s.Names() {
			if !strings.Contains(src.String(), `SQL("`+name+`")`) {
				t.Errorf("statement %s is not used", name)
			}
		}
	}
}
