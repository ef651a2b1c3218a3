package webhooks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/webhooks"
)

// A URL refused for its private address names the setting that allows it,
// so a developer pointing a webhook at localhost knows where to look.
func TestPrivateRefusalNamesTheSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{Resolver: fakeResolver{"internal.test": "10.1.2.3"}, RetryMin: time.Hour})
	for _, url := range []string{"http://127.0.0.1:8080/hook", "http://internal.test/hook"} {
		_, _, err := e.wh.CreateEndpoint(t.Context(), "", url, nil)
		if err == nil || !strings.Contains(err.Error(), "WEBHOOK_ALLOW_PRIVATE=true") {
			t.Errorf("CreateEndpoint(%q) = %v, want the refusal to name WEBHOOK_ALLOW_PRIVATE=true", url, err)
		}
	}
}
