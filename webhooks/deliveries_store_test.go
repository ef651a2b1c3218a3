package webhooks

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// seedDeliveries stores two endpoints, events of four payments of two
// clients (the seventh swept: no row), and 60 deliveries of those events
// in every status with their event's payment and client, as the pass that
// makes them writes them (a delivery of the seventh keeps them), all
// created at the same instant, so that a page that broke ties by time
// would lose or repeat some. It returns them as stored, oldest first.
func seedDeliveries(t *testing.T, db dbtest.DB) []models.WebhookDelivery {
	t.Helper()
	at := now()
	for _, e := range []models.WebhookEndpoint{
		{ID: "we_a", URL: "https://a.test/", Secret: "sa", ClientID: "client-1", CreatedAt: at},
		{ID: "we_b", URL: "https://b.test/", Secret: "sb", CreatedAt: at},
	} {
		if err := db.Gorm.Create(&e).Error; err != nil {
			t.Fatal(err)
		}
	}
	var evs []models.PaymentEvent
	for seq := int64(1); seq <= 8; seq++ {
		if seq == 7 {
			continue // swept
		}
		pay, client := eventOf(seq)
		evs = append(evs, models.PaymentEvent{Seq: seq, Type: "PAYMENT_CREATED", At: at, PaymentID: pay, ClientID: client})
	}
	if err := db.Gorm.Create(&evs).Error; err != nil {
		t.Fatal(err)
	}
	statuses := []string{"PENDING", "DELIVERED", "DELIVERED", "FAILED", "CANCELED"}
	rows := make([]models.WebhookDelivery, 60)
	for i := range rows {
		endpoint := "we_b"
		if i%3 == 0 {
			endpoint = "we_a"
		}
		seq := int64(i%8 + 1)
		pay, client := eventOf(seq)
		rows[i] = models.WebhookDelivery{EventID: seq, EventSeq: seq, EndpointID: endpoint, EventPaymentID: pay,
			EventClientID: client, Status: statuses[i%len(statuses)], EventAt: at, CreatedAt: at, NextAttemptAt: at}
	}
	if err := db.Gorm.Create(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// eventOf is the payment and client of the seeded event seq.
func eventOf(seq int64) (pay, client string) {
	pay, client = fmt.Sprintf("pay_%d", seq%4), "client-1"
	if seq%4 >= 2 {
		client = "client-2"
	}
	return pay, client
}

// matches says whether the delivery d, of the seeded events, is one f
// lists.
func matches(f DeliveryFilter, d models.WebhookDelivery) bool {
	pay, client := eventOf(d.EventSeq)
	return (f.Status == "" || d.Status == f.Status) && (f.EndpointID == "" || d.EndpointID == f.EndpointID) &&
		(f.PaymentID == "" || pay == f.PaymentID) && (f.ClientID == "" || client == f.ClientID)
}

// TestStoreDeliveryPages: with every filter and several together, walking
// the pages older from the newest, then newer back from the oldest, lists
// each matching delivery once, newest first, none of another; the
// deliveries share one creation time.
func TestStoreDeliveryPages(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		rows := seedDeliveries(t, db)
		s := &Service{store: openStore(t, db)}
		for _, f := range []DeliveryFilter{
			{},
			{Status: "FAILED"},
			{Status: "PENDING"},
			{Status: "DELIVERED"},
			{Status: "CANCELED", ClientID: "client-2"},
			{Status: "FAILED", EndpointID: "we_a"},
			{EndpointID: "we_a"},
			{PaymentID: "pay_1"},
			{PaymentID: "pay_3"}, // with the deliveries of the swept event
			{ClientID: "client-2"},
			{ClientID: "client-1", Status: "DELIVERED"},
			{PaymentID: "pay_2", EndpointID: "we_b", Status: "CANCELED"},
			{EndpointID: "we_b", ClientID: "client-1"},
			{PaymentID: "pay_3", ClientID: "client-1"}, // none: pay_3 is client-2's
			{EndpointID: "we_none"},
		} {
			var want []int64
			for _, d := range slices.Backward(rows) {
				if matches(f, d) {
					want = append(want, d.ID)
				}
			}
			for _, size := range []int{1, 4, 7, 100} {
				older, last := walkOlder(t, s, f, size)
				if !slices.Equal(older, want) {
					t.Errorf("%+v by %d, older: %v\nwant %v", f, size, older, want)
				}
				if len(want) == 0 {
					continue
				}
				// Back from the oldest page: every newer delivery once,
				// ending on the newest page.
				got := append(walkNewer(t, s, f, size, last.Newer), ids(last)...)
				slices.Sort(got)
				got = slices.Compact(got)
				sorted := slices.Sorted(slices.Values(want))
				if last.Newer == "" && len(want) > size || !slices.Equal(got, sorted) {
					t.Errorf("%+v by %d, newer: %v (from %q)\nwant %v", f, size, got, last.Newer, sorted)
				}
			}
		}
	})
}

func ids(p DeliveryPage) []int64 {
	out := make([]int64, len(p.Deliveries))
	for i, d := range p.Deliveries {
		out[i] = d.ID
	}
	return out
}

// checkPage fails t unless p lists at most size deliveries of f, newest
// first.
func checkPage(t *testing.T, f DeliveryFilter, size int, p DeliveryPage) {
	t.Helper()
	got := ids(p)
	if !slices.IsSortedFunc(got, func(a, b int64) int { return int(b - a) }) || len(got) > size {
		t.Fatalf("%+v: page %v not newest first within %d", f, got, size)
	}
	for _, d := range p.Deliveries {
		if !matches(f, d.WebhookDelivery) {
			t.Fatalf("%+v: delivery %d (%s, %s, seq %d) does not match", f, d.ID, d.Status, d.EndpointID, d.EventSeq)
		}
	}
}

// walkOlder pages through f's deliveries, size at a time, older from the
// newest page, and returns the ids met and the last page.
func walkOlder(t *testing.T, s *Service, f DeliveryFilter, size int) ([]int64, DeliveryPage) {
	t.Helper()
	var out []int64
	cursor := ""
	for range 200 {
		page, err := s.Deliveries(t.Context(), f, size, cursor, "")
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		checkPage(t, f, size, page)
		out = append(out, ids(page)...)
		if page.Older == "" {
			return out, page
		}
		cursor = page.Older
	}
	t.Fatalf("%+v: no last page after 200", f)
	return nil, DeliveryPage{}
}

// walkNewer pages through f's deliveries, size at a time, newer from the
// cursor, and returns the ids met; each page must reach above the last.
func walkNewer(t *testing.T, s *Service, f DeliveryFilter, size int, cursor string) []int64 {
	t.Helper()
	var out []int64
	top := int64(0)
	for range 200 {
		if cursor == "" {
			return out
		}
		page, err := s.Deliveries(t.Context(), f, size, "", cursor)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		checkPage(t, f, size, page)
		got := ids(page)
		if len(got) == 0 || got[0] <= top {
			t.Fatalf("%+v: newer page %v does not reach above %d", f, got, top)
		}
		top = got[0]
		out = append(out, got...)
		cursor = page.Newer
	}
	t.Fatalf("%+v: no newest page after 200", f)
	return nil
}

// TestDeliveriesRefuseBadInput: a status that is not one, an id no
// delivery can name, and a cursor not made here (another version, a sign
// or leading zero, zero, past int64, not base64) are bad input on both
// databases, never a database error.
func TestDeliveriesRefuseBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := &Service{store: openStore(t, db)}
		seedDeliveries(t, db)
		for _, f := range []DeliveryFilter{
			{Status: "failed"}, {Status: "SENT"}, {PaymentID: "pay_\x00"}, {EndpointID: "we_\xff"},
			{ClientID: string(make([]byte, 101))}, {PaymentID: " pay_1"},
		} {
			if _, err := s.Deliveries(t.Context(), f, 10, "", ""); !errors.Is(err, payments.ErrInvalidInput) {
				t.Errorf("Deliveries(%+q) = %v, want ErrInvalidInput", f, err)
			}
		}
		for _, raw := range []string{"d2:5", "d1:+5", "d1:05", "d1:0", "d1:-3", "d1:9223372036854775808", "d1:", "d1", "v1:1:pay_x"} {
			cursor := b64(raw)
			for _, args := range [][2]string{{cursor, ""}, {"", cursor}} {
				if _, err := s.Deliveries(t.Context(), DeliveryFilter{}, 10, args[0], args[1]); !errors.Is(err, payments.ErrInvalidInput) {
					t.Errorf("Deliveries(after %q, before %q) = %v, want ErrInvalidInput", args[0], args[1], err)
				}
			}
		}
		for _, cursor := range []string{"not a cursor", encodeDeliveryCursor(3) + "="} {
			if _, err := s.Deliveries(t.Context(), DeliveryFilter{}, 10, cursor, ""); !errors.Is(err, payments.ErrInvalidInput) {
				t.Errorf("Deliveries(after %q) = %v, want ErrInvalidInput", cursor, err)
			}
		}
		c := encodeDeliveryCursor(3)
		if _, err := s.Deliveries(t.Context(), DeliveryFilter{}, 10, c, c); !errors.Is(err, payments.ErrInvalidInput) {
			t.Errorf("Deliveries(after and before) = %v, want ErrInvalidInput", err)
		}
		for _, limit := range []int{0, -1, MaxDeliveryPage + 1} {
			if _, err := s.Deliveries(t.Context(), DeliveryFilter{}, limit, "", ""); !errors.Is(err, payments.ErrInvalidInput) {
				t.Errorf("Deliveries(limit %d) = %v, want ErrInvalidInput", limit, err)
			}
		}
	})
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestDeliveriesFilterSpacedClient: a client id may begin or end with
// spaces (payments allow it) and is compared in NFC, as everywhere: the
// filter finds that client's deliveries as it is, typed decomposed too,
// and never those of the client without the spaces.
func TestDeliveriesFilterSpacedClient(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := &Service{store: openStore(t, db)}
		at := now()
		if err := db.Gorm.Create(&models.WebhookEndpoint{ID: "we_s", URL: "https://s.test/", Secret: "s", CreatedAt: at}).Error; err != nil {
			t.Fatal(err)
		}
		clients := []string{" caf\u00e9 ", "caf\u00e9"} // NFC, as stored
		for i, client := range clients {
			d := models.WebhookDelivery{EventID: int64(i + 1), EventSeq: int64(i + 1), EndpointID: "we_s",
				EventPaymentID: fmt.Sprintf("pay_s%d", i), EventClientID: client, Status: "DELIVERED", EventAt: at,
				CreatedAt: at, NextAttemptAt: at}
			if err := db.Gorm.Create(&d).Error; err != nil {
				t.Fatal(err)
			}
		}
		for filter, want := range map[string]string{" caf\u00e9 ": "pay_s0", " cafe\u0301 ": "pay_s0", "cafe\u0301": "pay_s1"} {
			page, err := s.Deliveries(t.Context(), DeliveryFilter{ClientID: filter}, 10, "", "")
			if err != nil {
				t.Fatalf("client %+q: %v", filter, err)
			}
			if len(page.Deliveries) != 1 || page.Deliveries[0].EventPaymentID != want {
				t.Errorf("client %+q lists %+v, want only %s's delivery", filter, page.Deliveries, want)
			}
		}
	})
}
