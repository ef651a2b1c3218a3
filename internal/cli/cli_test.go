package cli_test

import (
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestHelp: `cmpay help` lists every command.
func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := cmd(t, "", "help")
	for _, want := range []string{"Usage: cmpay ", "cmpay migrate ", "cmpay serve ", "cmpay staff …", "cmpay tokens …"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help: exit %d, no %q in\n%s", code, want, out)
		}
	}
}

// TestServeRefusesArguments: `cmpay serve` takes none; a mistake gets the
// usage and exit status 2 instead of a server.
func TestServeRefusesArguments(t *testing.T) {
	t.Parallel()
	url := dbtest.Empty(t, "sqlite")
	if code, out, errOut := cmd(t, url, "serve", "now"); code != 2 || out != "" || !strings.Contains(errOut, "Usage: cmpay serve") {
		t.Errorf("serve now: exit %d, stdout %q, stderr %q; want 2 and the usage", code, out, errOut)
	}
}
