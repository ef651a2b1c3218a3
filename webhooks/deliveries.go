package webhooks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cmpay/cmpay/internal/clientid"
	"github.com/cmpay/cmpay/internal/storable"
	"github.com/cmpay/cmpay/models"
)

// DeliveryStatuses are the statuses a delivery can have, in the order the
// admin offers them: to be made (or made again), made, given up after
// WEBHOOK_MAX_AGE, and cancelled with its endpoint.
var DeliveryStatuses = []string{"PENDING", "DELIVERED", "FAILED", "CANCELED"}

// DeliveryFilter narrows the admin's list of deliveries; each field left
// "" matches every delivery.
type DeliveryFilter struct {
	// Status is one of DeliveryStatuses.
	Status string
	// EndpointID is the endpoint the deliveries go to.
	EndpointID string
	// PaymentID and ClientID are the payment and the client the delivered
	// event is about, as the delivery records them when it is made; one
	// made before schema version 11 whose event was already swept then
	// has neither. ClientID is compared as every client id is, in NFC
	// (package clientid), spaces included.
	PaymentID, ClientID string
}

// check refuses a filter no delivery can match because it is not a value
// CMPay ever stores: an unknown status, or an id longer than its column or
// not text both databases hold (PostgreSQL refuses a NUL with an error).
// The ids CMPay makes have no surrounding spaces; a client's id, which the
// client chose, may (payments' validateClientID allows them).
func (f DeliveryFilter) check() error {
	if f.Status != "" && !slices.Contains(DeliveryStatuses, f.Status) {
		return invalid("status", "status must be one of "+strings.Join(DeliveryStatuses, ", "))
	}
	for _, c := range []struct {
		field, value string
		max          int
		spaced       bool
	}{{"endpoint", f.EndpointID, 40, false}, {"payment", f.PaymentID, 40, false}, {"client", f.ClientID, 100, true}} {
		if !storable.Text(c.value) || utf8.RuneCountInString(c.value) > c.max {
			return invalid(c.field, fmt.Sprintf("%s is not an id CMPay stores: at most %d characters of text", c.field, c.max))
		}
		if !c.spaced && strings.TrimSpace(c.value) != c.value {
			return invalid(c.field, c.field+" is not an id CMPay gives: those have no surrounding spaces")
		}
	}
	return nil
}

// DeliveryPage is one page of the admin's list of deliveries, newest
// first.
type DeliveryPage struct {
	Deliveries []Delivery
	// Older is the cursor of the deliveries older than the page's last, ""
	// when there are none; Newer that of those newer than its first, ""
	// when the page is the newest.
	Older, Newer string
}

// MaxDeliveryPage is the most deliveries one page lists.
const MaxDeliveryPage = 500

// Deliveries lists up to limit deliveries matching f, newest first, with
// their endpoint's URL, their event's type and payment, and their
// attempts. With after (a page's Older cursor) it lists those older than
// the cursor's delivery; with before (a Newer cursor) those just newer;
// with neither, the newest. Pages are keyset-paged on the delivery's id,
// so no delivery is skipped or shown twice however many are created
// meanwhile, and no page counts the table. A bad filter or a cursor this
// package did not make is a *payments.InvalidInputError.
func (s *Service) Deliveries(ctx context.Context, f DeliveryFilter, limit int, after, before string) (DeliveryPage, error) {
	f.ClientID = clientid.Normalize(f.ClientID)
	if err := f.check(); err != nil {
		return DeliveryPage{}, err
	}
	if limit < 1 || limit > MaxDeliveryPage {
		return DeliveryPage{}, invalid("limit", fmt.Sprintf("limit must be between 1 and %d", MaxDeliveryPage))
	}
	if after != "" && before != "" {
		return DeliveryPage{}, invalid("before", "give after or before, not both")
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ids, older, newer, err := s.pageIDs(ctx, f, limit, after, before)
	if err != nil {
		return DeliveryPage{}, err
	}
	out, err := s.store.deliveriesOf(ctx, ids)
	if err != nil {
		return DeliveryPage{}, fmt.Errorf("list webhook deliveries: %w", err)
	}
	page := DeliveryPage{Deliveries: out}
	if older && len(ids) > 0 {
		page.Older = encodeDeliveryCursor(ids[len(ids)-1])
	}
	if newer && len(ids) > 0 {
		page.Newer = encodeDeliveryCursor(ids[0])
	}
	return page, nil
}

// pageIDs are the ids of the page Deliveries lists, newest first, and
// whether older and newer deliveries follow. It reads one more than limit
// to know whether more follow: no count. Deliveries has refused after and
// before together.
func (s *Service) pageIDs(ctx context.Context, f DeliveryFilter, limit int, after, before string) (ids []int64, older, newer bool, err error) {
	if before != "" {
		from, err := decodeDeliveryCursor("before", before)
		if err != nil {
			return nil, false, false, err
		}
		ids, err := s.store.deliveryIDs(ctx, f, from, true, limit+1)
		if err != nil {
			return nil, false, false, fmt.Errorf("list webhook deliveries: %w", err)
		}
		if len(ids) > limit {
			slices.Reverse(ids[:limit])
			return ids[:limit], true, true, nil
		}
		// Fewer than a page is newer: the newest page, full, instead.
	}
	from := maxDeliveryID
	if after != "" {
		if from, err = decodeDeliveryCursor("after", after); err != nil {
			return nil, false, false, err
		}
	}
	ids, err = s.store.deliveryIDs(ctx, f, from, false, limit+1)
	if err != nil {
		return nil, false, false, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return ids[:min(limit, len(ids))], len(ids) > limit, after != "", nil
}

// maxDeliveryID is above every delivery's id: the newest page's bound.
// Both databases hold ids as signed 64-bit integers.
const maxDeliveryID = int64(1<<63 - 1)

// Delivery cursors are opaque to staff: base64url of "d1:<id>", the id a
// page ends or starts at.
const deliveryCursorVersion = "d1"

func encodeDeliveryCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(deliveryCursorVersion + ":" + strconv.FormatInt(id, 10)))
}

// decodeDeliveryCursor is the id the cursor names, or an InvalidInputError
// on field for a cursor encodeDeliveryCursor could not have made: only
// one spelling per position (no sign, no leading zero), and only ids a
// delivery can have.
func decodeDeliveryCursor(field, cursor string) (int64, error) {
	bad := invalid(field, field+" is not a cursor this page made: start again from the newest deliveries")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, bad
	}
	version, num, ok := strings.Cut(string(raw), ":")
	if !ok || version != deliveryCursorVersion {
		return 0, bad
	}
	id, err := strconv.ParseInt(num, 10, 64)
	if err != nil || id < 1 || encodeDeliveryCursor(id) != cursor {
		return 0, bad
	}
	return id, nil
}

// ErrNoDelivery: no delivery has that id (never made, or swept).
var ErrNoDelivery = errors.New("no such webhook delivery")

// Delivery reads the delivery id with its attempts, or ErrNoDelivery.
func (s *Service) Delivery(ctx context.Context, id int64) (Delivery, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	out, err := s.store.deliveriesOf(ctx, []int64{id})
	if err != nil {
		return Delivery{}, fmt.Errorf("read webhook delivery %d: %w", id, err)
	}
	if len(out) == 0 {
		return Delivery{}, ErrNoDelivery
	}
	return out[0], nil
}

// RecentDeliveries lists the newest limit deliveries, newest first, with
// their endpoint's URL, their event's type and their attempts.
func (s *Service) RecentDeliveries(ctx context.Context, limit int) ([]Delivery, error) {
	page, err := s.Deliveries(ctx, DeliveryFilter{}, limit, "", "")
	return page.Deliveries, err
}

// AdminEndpoints is how many endpoints AllEndpoints lists.
const AdminEndpoints = 200

// AllEndpoints lists the newest AdminEndpoints endpoints, deleted ones
// too, newest first: the admin's view. more says whether older ones were
// left out.
func (s *Service) AllEndpoints(ctx context.Context) (list []models.WebhookEndpoint, more bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err = s.store.allEndpoints(ctx, AdminEndpoints+1)
	if err != nil {
		return nil, false, fmt.Errorf("list webhook endpoints: %w", err)
	}
	if len(list) > AdminEndpoints {
		return list[:AdminEndpoints], true, nil
	}
	return list, false, nil
}
