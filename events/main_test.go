package events_test

import (
	"os"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestMain fails the run if a test leaves a goroutine running (dbtest.Main
// checks with goleak): the service's hub, sequencer, listener and sweeper,
// and every subscription, must end with the test.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
