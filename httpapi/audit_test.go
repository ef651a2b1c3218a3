package httpapi_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestGraphQLOverHTTPAudit runs the npm package graphql-http's server audit
// suite (scripts/graphql-http-audit) against the real handler. Every MUST
// and every SHOULD audit must pass; MAY audits are reported.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("../scripts/graphql-http-audit")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphql-http")); err != nil {
		t.Fatalf("graphql-http is not installed: run `npm ci --prefix %s` (scripts/test.sh does): %v", dir, err)
	}
	b := setup(t, dbtest.SQLite(t))
	cmd := exec.Command("node", "audit.mjs", b.srv.URL+"/graphql")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AUDIT_TOKEN="+token)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit: %v\n%s", err, out)
	}
	var results []struct{ ID, Name, Status, Reason string }
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("audit output: %v\n%s", err, out)
	}
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Status]++
		switch r.Status {
		case "ok":
		case "notice":
			t.Logf("MAY audit not met: %s: %s", r.Name, r.Reason)
		default: // "error" is a MUST, "warn" a SHOULD
			t.Errorf("%s audit failed: %s: %s", r.Status, r.Name, r.Reason)
		}
	}
	if len(results) < 60 {
		t.Errorf("only %d audits ran; graphql-http 1.23.1 has 61", len(results))
	}
	t.Logf("graphql-http audits: %d ok, %d notice, %d warn, %d error", counts["ok"], counts["notice"], counts["warn"], counts["error"])
}
