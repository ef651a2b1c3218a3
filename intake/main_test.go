package intake_test

import (
	"os"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
