package cli_test

import (
	"os"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestMain fails the run if a command leaves a goroutine running (dbtest.Main
// checks with goleak).
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
