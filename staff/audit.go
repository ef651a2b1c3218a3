package staff

import (
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

// Action names what an audit entry records.
type Action string

const (
	ActSignIn         Action = "sign-in"
	ActSignOut        Action = "sign-out"
	ActPasswordChange Action = "password.change"
	// ActPasswordSet: ADMIN_PASSWORD set the bootstrap account's password at start.
	ActPasswordSet   Action = "password.set"
	ActStaffAdd      Action = "staff.add"
	ActStaffRole     Action = "staff.role"
	ActStaffDisable  Action = "staff.disable"
	ActStaffView     Action = "staff.view"
	ActAuditView     Action = "audit.view"
	ActExport        Action = "export"
	ActCapture       Action = "capture"
	ActCancel        Action = "cancel"
	ActRefund        Action = "refund"
	ActPaymentsView  Action = "payments.view"
	ActWebhooksView  Action = "webhooks.view"
	ActTokensView    Action = "tokens.view"
	ActTokenCreate   Action = "token.create"
	ActTokenRevoke   Action = "token.revoke"
	ActWebhookResend Action = "webhook.resend"
)

// Actions lists every action, for the audit page's filter.
var Actions = []Action{ActSignIn, ActSignOut, ActCapture, ActCancel, ActRefund, ActExport,
	ActStaffAdd, ActStaffRole, ActStaffDisable, ActPasswordChange, ActPasswordSet, ActStaffView, ActAuditView, ActPaymentsView,
	ActWebhooksView, ActWebhookResend, ActTokensView, ActTokenCreate, ActTokenRevoke}

// Outcomes of the audit log's own entries. Entries read from payment
// attempts carry the attempt's outcome instead (applied, replayed, refused,
// rejected).
const (
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"
	OutcomeDenied  = "denied"
	OutcomeStarted = "started"
	OutcomeError   = "error"
)

// Actor is who an entry is about and where they were.
type Actor struct {
	Username string
	Address  string
}

// Actors for changes made outside the UI.
var (
	CommandLine = Actor{Username: "(command line)"}
	ServerStart = Actor{Username: "(server start)"}
)

// Entry is one line of the audit log.
type Entry struct {
	At      time.Time
	Actor   string
	Address string
	Action  Action
	Target  string
	Outcome string
	Detail  string
	// Payment is set for a capture, cancel or refund: the entry is the
	// payments engine's record of the request (an attempt), and Target is
	// the payment's id.
	Payment bool
}

// appendEntry writes an entry in tx: the caller's transaction, so that the
// entry commits or rolls back with what it records. at is the entry's time.
func appendEntry(tx *gorm.DB, at time.Time, who Actor, action Action, target, outcome, detail string) error {
	row := storedEntry(at, who, action, target, outcome, detail)
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("write audit entry: %w", err)
	}
	return nil
}

// storedEntry is an entry as stored, its fields cut to their columns' sizes.
func storedEntry(at time.Time, who Actor, action Action, target, outcome, detail string) models.StaffAuditEntry {
	return models.StaffAuditEntry{
		At:      at,
		Actor:   clip(who.Username, 100),
		Address: clip(who.Address, 64),
		Action:  string(action),
		Target:  clip(target, 200),
		Outcome: outcome,
		Detail:  clip(detail, 1000),
	}
}

//go:embed sql/common.sql
var sqlFiles embed.FS

// statements are the staff package's SQL (sql/common.sql), for what is
// written in another package's transaction, which hands over a
// sqlq.Runner.
var statements = sqlq.MustLoad(sqlFiles, "sql/common.sql")

// appendEntryIn writes an entry in tx, another package's transaction.
func appendEntryIn(ctx context.Context, tx sqlq.Runner, at time.Time, who Actor, action Action, target, outcome, detail string) error {
	r := storedEntry(at, who, action, target, outcome, detail)
	_, err := tx.Exec(ctx, statements.SQL("insert_audit_entry"), r.At, r.Actor, r.Address, r.Action, r.Target, r.Outcome, r.Detail)
	if err != nil {
		return fmt.Errorf("write audit entry: %w", err)
	}
	return nil
}

// Record writes one audit entry on its own: for what changes nothing in the
// database (a failed sign-in, a refused request, an export), or whose change
// is recorded elsewhere in its own transaction. The write outlives ctx (a
// client that went away, a request whose deadline passed: what happened is
// recorded all the same) but not auditWriteTimeout, so that a database that
// stops answering does not hold the request with it.
func (s *Store) Record(ctx context.Context, who Actor, action Action, target, outcome, detail string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	return appendEntry(s.db.WithContext(ctx), s.now(), who, action, target, outcome, detail)
}

// auditWriteTimeout bounds Record's write. It takes a millisecond.
const auditWriteTimeout = 5 * time.Second

// ResendAudit is the audit entry of a webhook delivery resent by who,
// written by package webhooks in the transaction that re-arms it. A
// resend that found the delivery not failed is recorded as failed: it
// changed nothing.
func (s *Store) ResendAudit(who Actor, deliveryID int64) webhooks.Audit {
	return func(ctx context.Context, tx sqlq.Runner, changed bool) error {
		outcome, detail := OutcomeOK, "sent again"
		if !changed {
			outcome, detail = OutcomeFailed, "not a failed delivery: nothing changed"
		}
		return appendEntryIn(ctx, tx, s.now(), who, ActWebhookResend, "delivery "+strconv.FormatInt(deliveryID, 10), outcome, detail)
	}
}

// TokenAudit is the audit entry of an API token created or revoked by who
// (action ActTokenCreate or ActTokenRevoke), written by package apitoken in
// the transaction that makes the change. Revoking a token revoked already
// is recorded as failed: it changed nothing.
func (s *Store) TokenAudit(who Actor, action Action) apitoken.Audit {
	return func(ctx context.Context, tx sqlq.Runner, t apitoken.Token, unchanged bool) error {
		outcome, detail := OutcomeOK, ""
		switch {
		case unchanged:
			outcome, detail = OutcomeFailed, "already revoked"
		case action == ActTokenCreate:
			detail = "scopes " + auth.JoinScopes(t.Scopes)
			if t.ClientID != "" {
				detail += ", client " + t.ClientID
			}
		}
		return appendEntryIn(ctx, tx, s.now(), who, action, t.ID, outcome, detail)
	}
}

// clip cuts s to at most n bytes on a character boundary: what was typed
// into a username box may be anything and any length.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// AuditFilter narrows the audit log. Zero fields do not filter.
type AuditFilter struct {
	Actor  string
	Action Action
	// From and To bound the time: From <= at < To.
	From, To time.Time
}

// AuditPage is a page of the audit log, newest first.
type AuditPage struct {
	Entries []Entry
	// Next resumes after the last entry; "" on the last page.
	Next string
}

// opActions maps the payments engine's operations to audit actions.
var opActions = map[payments.Operation]Action{
	payments.OpCapture: ActCapture,
	payments.OpCancel:  ActCancel,
	payments.OpRefund:  ActRefund,
}

// AuditLog returns up to first entries matching f, newest first, after the
// cursor from an earlier page ("" for the first).
//
// The log is two tables read as one. The audit table holds sign-ins,
// sign-outs, account changes, exports, refusals and requests that failed
// before reaching a payment. The captures, cancels and refunds made in the
// admin are the payments engine's attempt rows with transport "admin": the
// engine writes each in the same statement as the change it records, with
// the staff member and address, so it is exactly as durable as the change.
// Writing a second row here, after the engine returns, could not be in that
// transaction: a crash between the two would lose the record of a refund
// that happened. So those rows are read, not copied.
//
// Each side is read newest first through its own index and limited, then
// merged; the cursor is (time, source, id).
func (s *Store) AuditLog(ctx context.Context, f AuditFilter, first int, after string) (AuditPage, error) {
	if first <= 0 || first > 500 {
		return AuditPage{}, invalid("a page has 1 to 500 entries")
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return AuditPage{}, invalid("the end of the time range must come after its start")
	}
	var cur *auditCursor
	if after != "" {
		c, err := decodeAuditCursor(after)
		if err != nil {
			return AuditPage{}, err
		}
		cur = &c
	}

	// The audit table's side.
	var sides []string
	var args []any
	{
		conds, cargs := []string{}, []any{}
		where := func(c string, a ...any) { conds = append(conds, c); cargs = append(cargs, a...) }
		if f.Actor != "" {
			where("actor = ?", f.Actor)
		}
		if f.Action != "" {
			where("action = ?", string(f.Action))
		}
		timeConds(where, "at", "id", srcStaff, f, cur)
		q := "SELECT at, '" + srcStaff + "' AS src, id, actor, address, action, target, outcome, detail, '' AS params FROM staff_audit"
		if len(conds) > 0 {
			q += " WHERE " + strings.Join(conds, " AND ")
		}
		sides = append(sides, "SELECT * FROM ("+q+" ORDER BY at DESC, id DESC LIMIT ?) AS staff_side")
		args = append(append(args, cargs...), first+1)
	}
	// The payment attempts' side, unless the action filter rules it out.
	op, paymentAction := payments.Operation(""), f.Action == ""
	for o, a := range opActions {
		if a == f.Action {
			op, paymentAction = o, true
		}
	}
	if paymentAction {
		// "transport = 'admin'" is written exactly as the partial index's
		// predicate (Migrate), so the read is a backward range of it.
		conds, cargs := []string{"a.transport = 'admin'"}, []any{}
		where := func(c string, a ...any) { conds = append(conds, c); cargs = append(cargs, a...) }
		if f.Actor != "" {
			where("a.actor = ?", f.Actor)
		}
		if op != "" {
			where("a.operation = ?", string(op))
		}
		timeConds(where, "a.at", "a.id", srcPayment, f, cur)
		// No join here: joined to payments, the planner may hash-join a
		// million payments before it limits (190 ms measured for the
		// refunds filter); currencies are read for the page's rows below.
		q := "SELECT a.at, '" + srcPayment + "' AS src, a.id, a.actor, a.actor_address AS address, a.operation AS action, " +
			"a.payment_id AS target, a.outcome, a.refusal AS detail, COALESCE(a.params, '') AS params " +
			"FROM idempotency_attempts a WHERE " + strings.Join(conds, " AND ")
		sides = append(sides, "SELECT * FROM ("+q+" ORDER BY a.at DESC, a.id DESC LIMIT ?) AS payment_side")
		args = append(append(args, cargs...), first+1)
	}
	query := strings.Join(sides, " UNION ALL ") + " ORDER BY at DESC, src DESC, id DESC LIMIT ?"
	args = append(args, first+1)

	var rows []auditRow
	if err := s.db.WithContext(ctx).Raw(query, args...).Scan(&rows).Error; err != nil {
		return AuditPage{}, fmt.Errorf("read audit log: %w", err)
	}
	page := AuditPage{}
	more := len(rows) > first
	if more {
		rows = rows[:first]
	}
	if err := s.currencies(ctx, rows); err != nil {
		return AuditPage{}, err
	}
	page.Entries = make([]Entry, len(rows))
	for i, r := range rows {
		page.Entries[i] = r.entry()
	}
	if more {
		last := rows[len(rows)-1]
		page.Next = auditCursor{at: last.At.UTC(), src: last.Src, id: last.ID}.encode()
	}
	return page, nil
}

// currencies fills in the currency of each payment entry's payment, which
// its amount is shown in: one read by primary key for the page.
func (s *Store) currencies(ctx context.Context, rows []auditRow) error {
	var ids []string
	for _, r := range rows {
		if r.Src == srcPayment {
			ids = append(ids, r.Target)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var found []struct{ ID, Currency string }
	if err := s.db.WithContext(ctx).Raw("SELECT id, currency FROM payments WHERE id IN ?", ids).Scan(&found).Error; err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	byID := make(map[string]string, len(found))
	for _, f := range found {
		byID[f.ID] = f.Currency
	}
	for i := range rows {
		if rows[i].Src == srcPayment {
			rows[i].Currency = byID[rows[i].Target]
		}
	}
	return nil
}

// The sources of the audit log, in the order entries of the same instant
// are listed (descending).
const (
	srcStaff   = "s"
	srcPayment = "p"
)

// timeConds adds the time range and the cursor's position to one side's
// conditions. In the merged order (at DESC, src DESC, id DESC), a side whose
// source sorts after the cursor's starts at the cursor's instant, one
// before it just after, and the cursor's own side after the cursor's id.
func timeConds(where func(string, ...any), at, id, src string, f AuditFilter, cur *auditCursor) {
	if !f.From.IsZero() {
		where(at+" >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		where(at+" < ?", f.To.UTC())
	}
	if cur == nil {
		return
	}
	switch {
	case src == cur.src:
		where("("+at+" < ? OR ("+at+" = ? AND "+id+" < ?))", cur.at, cur.at, cur.id)
	case src < cur.src:
		where(at+" <= ?", cur.at)
	default:
		where(at+" < ?", cur.at)
	}
}

type auditRow struct {
	At       time.Time
	Src      string
	ID       int64
	Actor    string
	Address  string
	Action   string
	Target   string
	Outcome  string
	Detail   string
	Params   string
	Currency string `gorm:"-"`
}

// entry turns a row into what the page shows. A payment attempt's outcome
// is told in words, and its detail is what it asked for.
func (r auditRow) entry() Entry {
	e := Entry{At: r.At.UTC(), Actor: r.Actor, Address: r.Address, Action: Action(r.Action), Target: r.Target,
		Outcome: r.Outcome, Detail: r.Detail}
	if r.Src != srcPayment {
		return e
	}
	e.Payment = true
	e.Action = opActions[payments.Operation(r.Action)]
	refusal := r.Detail
	switch payments.Outcome(r.Outcome) {
	case payments.OutcomeApplied:
		e.Outcome = "applied"
	case payments.OutcomeReplayed:
		e.Outcome = "already done (replayed)"
	case payments.OutcomeRefused:
		e.Outcome = "refused"
	case payments.OutcomeRejected:
		e.Outcome = "rejected"
	default:
		e.Outcome = strings.ToLower(r.Outcome)
	}
	var params map[string]string
	_ = json.Unmarshal([]byte(r.Params), &params) // "" or unreadable: no detail
	var parts []string
	if amount, ok := params[string(payments.FieldAmount)]; ok {
		if m, err := payments.ParseAmount(amount, r.Currency); err == nil {
			amount = m.String() + " " + m.Currency
		}
		parts = append(parts, amount)
	} else if e.Action != ActCancel {
		parts = append(parts, "all available")
	}
	if reason, ok := params[string(payments.FieldReason)]; ok {
		parts = append(parts, "reason: "+reason)
	}
	switch refusal {
	case "PAYMENT_STATE_CONFLICT":
		parts = append(parts, "the payment's status did not allow it")
	case "AMOUNT_EXCEEDS_AVAILABLE":
		parts = append(parts, "more than was available")
	}
	if payments.Outcome(r.Outcome) == payments.OutcomeRejected {
		parts = append(parts, "the idempotency key had been used for another request")
	}
	e.Detail = strings.Join(parts, "; ")
	return e
}

// auditCursor is a position in the merged log.
type auditCursor struct {
	at  time.Time
	src string
	id  int64
}

func (c auditCursor) encode() string {
	raw := "a1:" + strconv.FormatInt(c.at.UnixMicro(), 10) + ":" + c.src + ":" + strconv.FormatInt(c.id, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeAuditCursor(s string) (auditCursor, error) {
	bad := invalid("after is not a position in the audit log")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return auditCursor{}, bad
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 4 || parts[0] != "a1" || (parts[2] != srcStaff && parts[2] != srcPayment) {
		return auditCursor{}, bad
	}
	micros, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil {
		return auditCursor{}, bad
	}
	return auditCursor{at: time.UnixMicro(micros).UTC(), src: parts[2], id: id}, nil
}
