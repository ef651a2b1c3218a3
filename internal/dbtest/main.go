package dbtest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cmpay/cmpay/database"
)

// Main runs a package's tests, closes the connection to the test server
// they shared, and then fails the run if a goroutine is still running: the
// batcher, the sweeper, the log flusher, servers and subscriptions all
// start goroutines, and one a test leaves behind is a leak in the making.
// Each package's TestMain calls it: os.Exit(dbtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if admin != nil {
		_ = database.Close(admin)
	}
	if templateDir != "" {
		_ = os.RemoveAll(templateDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n%v\n", err)
			code = 1
		}
	}
	return code
}
