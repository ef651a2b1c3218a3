package httpapi_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
)

// TestSubscriptionAfterIsChecked: `after` beyond the newest event is
// BAD_USER_INPUT, and the error for an overlong `after` does not repeat
// it.
func TestSubscriptionAfterIsChecked(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	b.create(t, "after-1", input("shop-after", "1.00", "BRL", "PIX"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+token)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for i, after := range []string{"2", "9223372036854775807", strings.Repeat("9", 50_000)} {
		id := strconv.Itoa(i)
		if err := ws.Subscribe(ctx, id, streamtest.EventsQuery, map[string]any{"after": after}); err != nil {
			t.Fatal(err)
		}
		m, err := ws.Next(ctx)
		for err == nil && m.ID != id { // the previous one's complete
			m, err = ws.Next(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(m.Payload), "BAD_USER_INPUT") || len(m.Payload) > 1000 {
			t.Errorf("after of %d characters: %s %d bytes %.300s", len(after), m.Type, len(m.Payload), m.Payload)
		}
	}
}
