package webhooks

import (
	"context"
	"embed"
	"fmt"
	"math"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// store is the seam between the Service and a database: what it keeps of
// endpoints and deliveries. What both dialects run alike is shared's;
// claiming and recording, which PostgreSQL does a batch to a statement,
// and reading by a list of ids, which SQLite cannot bind, are each
// dialect's (store_postgres.go, store_sqlite.go). One test suite runs
// against both implementations (store_test.go).
type store interface {
	// addEndpoint stores a new endpoint unless its client already has max
	// endpoints not deleted; it says whether it stored it.
	addEndpoint(ctx context.Context, e models.WebhookEndpoint, max int) (bool, error)
	// endpoints lists the endpoints not deleted of o's client (every one
	// for o.All), oldest first, without their secrets.
	endpoints(ctx context.Context, o Owner) ([]models.WebhookEndpoint, error)
	// allEndpoints lists the newest limit endpoints, deleted ones too,
	// without their secrets.
	allEndpoints(ctx context.Context, limit int) ([]models.WebhookEndpoint, error)
	// deleteEndpoint stamps the endpoint id deleted at at, if it is o's
	// and was not deleted, and cancels its deliveries still to be made or
	// resent, in one transaction. It says whether it found such an
	// endpoint; one not deleted that is not o's is ErrForbidden, and
	// nothing is changed.
	deleteEndpoint(ctx context.Context, o Owner, id string, at time.Time) (bool, error)
	// rearm makes the FAILED delivery id pending again, due at due and
	// retried until expires, and runs audit (if not nil) in the same
	// transaction. It says whether the delivery was FAILED. One with
	// nothing to send is ErrNothingToSend, unchanged and not audited.
	rearm(ctx context.Context, id int64, due, expires time.Time, audit Audit) (bool, error)
	// deliveryIDs lists the ids of up to limit deliveries matching f with
	// an id below from, newest first, or with newer above it, oldest
	// first.
	deliveryIDs(ctx context.Context, f DeliveryFilter, from int64, newer bool, limit int) ([]int64, error)
	// deliveriesOf reads the deliveries ids (those still there), newest
	// first, with their attempts.
	deliveriesOf(ctx context.Context, ids []int64) ([]Delivery, error)
	// backlog counts the deliveries still to be made.
	backlog(ctx context.Context) (int64, error)
	// claim leases up to n deliveries due at now until until, under token,
	// so that no other claim takes them meanwhile, and says of each
	// whether its event's payment has any refund.
	claim(ctx context.Context, now, until time.Time, token int64, n int, l inFlight) ([]claim, error)
	// record writes each result's outcome, where its claim still holds,
	// with an attempt row.
	record(ctx context.Context, batch []result, outs []outcome) error
	// secrets lists every endpoint's id and stored secret, deleted ones
	// too.
	secrets(ctx context.Context) ([]models.WebhookEndpoint, error)
	// replaceSecret stores secret as the endpoint id's if it still holds
	// old, and says whether it did.
	replaceSecret(ctx context.Context, id, old, secret string) (bool, error)
	// refundsOf lists the refunds of the payments ids, oldest first.
	refundsOf(ctx context.Context, ids []string) ([]models.Refund, error)
}

// newStore is the store for db's dialect.
func newStore(db *gorm.DB) (store, error) {
	return sqlq.Pick[store](db, newPostgresStore, newSQLiteStore)
}

// The statements, in sql/*.sql: common.sql holds those both dialects run
// as written.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// shared runs what both dialects run alike, with their own statements
// (the files common.sql and the dialect's).
type shared struct {
	db sqlq.DB
	q  sqlq.Statements
	// idList binds a list of ids as the dialect's deliveries_of and
	// attempts_of read it: an array, or a JSON array.
	idList func([]int64) (any, error)
	// planned goes before the arguments of a statement that must be
	// planned for its arguments each time (on PostgreSQL; nothing on
	// SQLite).
	planned []any
}

func (st shared) addEndpoint(ctx context.Context, e models.WebhookEndpoint, max int) (bool, error) {
	var added bool
	err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
		if _, err := tx.Exec(ctx, st.q.SQL("lock_client_endpoints"), e.ClientID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, st.q.SQL("count_client_endpoints"), e.ClientID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return nil
		}
		_, err := tx.Exec(ctx, st.q.SQL("add_endpoint"), e.ID, e.URL, e.Secret, e.EventTypes, e.ClientID, e.CreatedAt)
		added = err == nil
		return err
	})
	return added, err
}

func (st shared) endpoints(ctx context.Context, o Owner) ([]models.WebhookEndpoint, error) {
	return sqlq.Collect(ctx, st.db, st.q.SQL("endpoints"), []any{o.Client, flag(o.All)}, scanEndpoint)
}

// flag is a bool as both dialects compare it: 1 or 0.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (st shared) allEndpoints(ctx context.Context, limit int) ([]models.WebhookEndpoint, error) {
	return sqlq.Collect(ctx, st.db, st.q.SQL("all_endpoints"), []any{limit}, scanEndpoint)
}

// scanEndpoint reads an endpoint without its secret.
func scanEndpoint(r sqlq.Row) (models.WebhookEndpoint, error) {
	var e models.WebhookEndpoint
	err := r.Scan(&e.ID, &e.URL, &e.EventTypes, &e.ClientID, &e.CreatedAt, &e.DeletedAt)
	return e, err
}

func (st shared) deleteEndpoint(ctx context.Context, o Owner, id string, at time.Time) (bool, error) {
	var found bool
	err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
		n, err := tx.Exec(ctx, st.q.SQL("delete_endpoint"), id, o.Client, at, flag(o.All))
		if err != nil {
			return err
		}
		if n != 1 {
			return st.othersEndpoint(ctx, tx, id)
		}
		found = true
		_, err = tx.Exec(ctx, st.q.SQL("cancel_endpoint_deliveries"), id)
		return err
	})
	return found, err
}

// othersEndpoint is ErrForbidden when the endpoint id exists, not deleted:
// a delete_endpoint that changed nothing found it, so it is another
// owner's. Nil when there is no such endpoint.
func (st shared) othersEndpoint(ctx context.Context, tx sqlq.Runner, id string) error {
	var n int
	if err := tx.QueryRow(ctx, st.q.SQL("live_endpoint"), id).Scan(&n); err != nil {
		return fmt.Errorf("look for endpoint: %w", err)
	}
	if n > 0 {
		return ErrForbidden
	}
	return nil
}

func (st shared) rearm(ctx context.Context, id int64, due, expires time.Time, audit Audit) (bool, error) {
	var changed bool
	err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
		n, err := tx.Exec(ctx, st.q.SQL("rearm_delivery"), id, due, expires)
		if err != nil {
			return err
		}
		changed = n > 0
		if !changed {
			var none int
			if err := tx.QueryRow(ctx, st.q.SQL("nothing_to_send"), id).Scan(&none); err != nil {
				return fmt.Errorf("look for what to send: %w", err)
			}
			if none > 0 {
				return ErrNothingToSend
			}
		}
		if audit == nil {
			return nil
		}
		return audit(ctx, tx, changed)
	})
	return changed, err
}

func (st shared) deliveryIDs(ctx context.Context, f DeliveryFilter, from int64, newer bool, limit int) ([]int64, error) {
	// Each filter is applied; the statement's name says which one's index
	// leads (see common.sql).
	args := append(slices.Clone(st.planned), f.Status, f.EndpointID, f.PaymentID, f.ClientID, from, limit)
	return sqlq.Collect(ctx, st.db, st.deliveriesStatement(f, newer), args, func(r sqlq.Row) (int64, error) {
		var id int64
		err := r.Scan(&id)
		return id, err
	})
}

// deliveriesStatement is the deliveries_* statement led by f's most
// selective filter: a payment has a few deliveries, the FAILED or
// CANCELED ones are few (support's), an endpoint or a client has more. A
// DELIVERED or PENDING status, most rows, leads nothing: those pages walk
// the primary key, so that no index on the status costs each claim and
// record an entry.
func (st shared) deliveriesStatement(f DeliveryFilter, newer bool) string {
	switch {
	case f.PaymentID != "" && newer:
		return st.q.SQL("deliveries_by_payment_newer")
	case f.PaymentID != "":
		return st.q.SQL("deliveries_by_payment_older")
	case (f.Status == "FAILED" || f.Status == "CANCELED") && newer:
		return st.q.SQL("deliveries_by_failed_newer")
	case f.Status == "FAILED" || f.Status == "CANCELED":
		return st.q.SQL("deliveries_by_failed_older")
	case f.EndpointID != "" && newer:
		return st.q.SQL("deliveries_by_endpoint_newer")
	case f.EndpointID != "":
		return st.q.SQL("deliveries_by_endpoint_older")
	case f.ClientID != "" && newer:
		return st.q.SQL("deliveries_by_client_newer")
	case f.ClientID != "":
		return st.q.SQL("deliveries_by_client_older")
	case newer:
		return st.q.SQL("deliveries_all_newer")
	}
	return st.q.SQL("deliveries_all_older")
}

func (st shared) deliveriesOf(ctx context.Context, ids []int64) ([]Delivery, error) {
	if len(ids) == 0 {
		return []Delivery{}, nil
	}
	list, err := st.idList(ids)
	if err != nil {
		return nil, err
	}
	out, err := sqlq.Collect(ctx, st.db, st.q.SQL("deliveries_of"), []any{list}, scanDelivery)
	if err != nil || len(out) == 0 {
		return out, err
	}
	at := make(map[int64]int, len(out))
	for i, d := range out {
		at[d.ID] = i
	}
	err = st.db.Query(ctx, st.q.SQL("attempts_of"), []any{list}, func(r sqlq.Row) error {
		var a models.WebhookAttempt
		if err := r.Scan(&a.ID, &a.DeliveryID, &a.At, &a.Status, &a.Error, &a.DurationMS); err != nil {
			return err
		}
		if i, ok := at[a.DeliveryID]; ok {
			out[i].AttemptLog = append(out[i].AttemptLog, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanDelivery reads a delivery with its endpoint's URL, its event's type
// and whether it has nothing to send.
func scanDelivery(r sqlq.Row) (Delivery, error) {
	var d Delivery
	err := r.Scan(&d.ID, &d.EventID, &d.EventSeq, &d.EndpointID, &d.Status, &d.EventAt, &d.CreatedAt, &d.Attempts,
		&d.Retries, &d.NextAttemptAt, &d.ExpiresAt, &d.LeaseUntil, &d.ClaimToken, &d.LastAttemptAt, &d.LastStatus,
		&d.LastError, &d.DeliveredAt, &d.EventType, &d.URL, &d.EventPaymentID, &d.EventClientID, &d.NothingToSend)
	return d, err
}

func (st shared) backlog(ctx context.Context) (int64, error) {
	var n int64
	err := st.db.QueryRow(ctx, st.q.SQL("backlog")).Scan(&n)
	return n, err
}

func (st shared) secrets(ctx context.Context) ([]models.WebhookEndpoint, error) {
	return sqlq.Collect(ctx, st.db, st.q.SQL("endpoint_secrets"), nil, func(r sqlq.Row) (models.WebhookEndpoint, error) {
		var e models.WebhookEndpoint
		err := r.Scan(&e.ID, &e.Secret)
		return e, err
	})
}

func (st shared) replaceSecret(ctx context.Context, id, old, secret string) (bool, error) {
	n, err := st.db.Exec(ctx, st.q.SQL("replace_secret"), id, old, secret)
	return n == 1, err
}

// scanClaim reads a claimed delivery with its endpoint, whether its
// event's payment has refunds, and its stored body.
func scanClaim(r sqlq.Row) (claim, error) {
	var c claim
	err := r.Scan(&c.ID, &c.EventID, &c.EventSeq, &c.EndpointID, &c.Retries, &c.EventAt, &c.ExpiresAt, &c.URL, &c.Secret, &c.ClientID,
		&c.HasRefunds, &c.Body)
	c.EventAt = c.EventAt.UTC()
	return c, err
}

// failedBody is the body the record statements store with a delivery:
// the one its attempt sent when the outcome is FAILED (a resend sends it
// again), nil otherwise, which leaves the stored one as it is.
func failedBody(r result, o outcome) *string {
	if o.status != "FAILED" || r.body == nil {
		return nil
	}
	b := string(r.body)
	return &b
}

// scanRefund reads a refund, with its status and the times it changed.
func scanRefund(r sqlq.Row) (models.Refund, error) {
	var f models.Refund
	err := r.Scan(&f.ID, &f.PaymentID, &f.AmountMinor, &f.Reason, &f.IdempotencyKey, &f.CreatedAt, &f.Status,
		&f.FailureCode, &f.SettledAt, &f.ReturnedAt)
	return f, err
}

// inFlight is what a claim must leave room for: the attempts this
// instance has under way by endpoint and by client, and the most each may
// have (zero: no limit), counting only endpoints not in Fast: those that
// answered quickly last time, which take what is due. An endpoint with
// nothing under way that is not in Silent (no answer last time) may take
// one attempt past its client's limit, up to PerEndpoint more.
type inFlight struct {
	PerEndpoint, PerClient int
	Endpoints, Clients     map[string]int
	Fast, Silent           []string
}

// caps are l's limits as the claim statements bind them: an endpoint's, a
// client's, and a client's with the first attempts of its endpoints that
// have nothing under way.
func (l inFlight) caps() (perEndpoint, perClient, withFirsts int) {
	perEndpoint, perClient = l.PerEndpoint, l.PerClient
	if perEndpoint <= 0 {
		perEndpoint = math.MaxInt32
	}
	if perClient <= 0 {
		perClient = math.MaxInt32
	}
	return perEndpoint, perClient, int(min(int64(perClient)+int64(perEndpoint), math.MaxInt32))
}

// claimWindow is how many of the oldest due deliveries a claim of n looks
// at to choose fairly among them.
func claimWindow(n int) int { return 8 * n }
