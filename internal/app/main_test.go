package app

import (
	"os"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestMain fails the run if a goroutine is left running (dbtest.Main
// checks with goleak): after Run returns, every service it started must
// have stopped.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
