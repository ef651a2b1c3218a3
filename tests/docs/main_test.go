package docs_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain makes the folder the server is built into (binaries), and
// checks that no goroutine outlives the tests: they start processes and
// wait for them on goroutines.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cmpay-docs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaries = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
