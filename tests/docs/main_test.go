package docs_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start processes and wait for them on goroutines: none may
// outlive them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
