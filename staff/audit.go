package staff

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/storable"
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
	// OutcomeRefused: a sign-in refused (429) without its password checked.
	OutcomeRefused = "refused"
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

// appendEntry writes an entry with q: in the caller's transaction, so that
// the entry commits or rolls back with what it records. at is the entry's
// time.
func appendEntry(ctx context.Context, q queries, at time.Time, who Actor, action Action, target, outcome, detail string) error {
	return q.appendEntry(ctx, storedEntry(at, who, action, target, outcome, detail))
}

// storedEntry is an entry as stored, its fields made storable and cut to
// their columns' sizes.
func storedEntry(at time.Time, who Actor, action Action, target, outcome, detail string) models.StaffAuditEntry {
	return models.StaffAuditEntry{
		At:      at,
		Actor:   clip(storableText(who.Username), 100),
		Address: clip(storableText(who.Address), 64),
		Action:  string(action),
		Target:  clip(storableText(target), 200),
		Outcome: outcome,
		Detail:  clip(storableText(detail), 1000),
	}
}

// storableText is s with every NUL byte and every byte that is not UTF-8
// replaced by U+FFFD: an entry records what someone typed (a username at
// sign-in, an id in a URL), and PostgreSQL refuses those bytes in text
// (SQLSTATE 22021), which would lose the entry and answer 500.
func storableText(s string) string {
	if storable.Text(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
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
	return appendEntry(ctx, s.st, s.now(), who, action, target, outcome, detail)
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
		return appendEntry(ctx, s.st.in(tx), s.now(), who, ActWebhookResend, resendTarget(deliveryID), outcome, detail)
	}
}

// RecordRefusedResend writes, on its own (Record), the audit entry of a
// resend of deliveryID by who refused before any change, for the reason
// detail: the refusal rolled back the transaction ResendAudit writes in.
func (s *Store) RecordRefusedResend(ctx context.Context, who Actor, deliveryID int64, detail string) error {
	return s.Record(ctx, who, ActWebhookResend, resendTarget(deliveryID), OutcomeFailed, detail)
}

// resendTarget is the audit log's target of a resend of deliveryID.
func resendTarget(deliveryID int64) string { return "delivery " + strconv.FormatInt(deliveryID, 10) }

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
		return appendEntry(ctx, s.st.in(tx), s.now(), who, action, t.ID, outcome, detail)
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
	if !f.From.IsZero() && !storable.Time(f.From) || !f.To.IsZero() && !storable.Time(f.To) {
		// PostgreSQL would refuse the time with an error, and SQLite
		// compare "10000-01-01" as text, before every entry.
		return AuditPage{}, invalid("a time range must lie within years 1 to 9999")
	}
	if !storable.Text(f.Actor) || !storable.Text(string(f.Action)) {
		// No entry holds them (storedEntry), and PostgreSQL would refuse
		// the query rather than find nothing.
		return AuditPage{}, invalid("a NUL character or bytes that are not UTF-8 are in a filter, and no entry can have them")
	}
	var cur *auditCursor
	if after != "" {
		c, err := decodeAuditCursor(after)
		if err != nil {
			return AuditPage{}, err
		}
		cur = &c
	}

	rows, err := s.st.auditEntries(ctx, auditRead{from: f.From.UTC(), before: sideEnd(srcStaff, f, cur), limit: first + 1,
		actor: f.Actor, action: string(f.Action)})
	if err != nil {
		return AuditPage{}, err
	}
	// The payment attempts' side, unless the action filter rules it out.
	op, paymentAction := payments.Operation(""), f.Action == ""
	for o, a := range opActions {
		if a == f.Action {
			op, paymentAction = o, true
		}
	}
	if paymentAction {
		attempts, err := s.st.adminAttempts(ctx, auditRead{from: f.From.UTC(), before: sideEnd(srcPayment, f, cur),
			limit: first + 1, actor: f.Actor, action: string(op)})
		if err != nil {
			return AuditPage{}, err
		}
		rows = append(rows, attempts...)
		slices.SortFunc(rows, func(a, b auditRow) int {
			return cmp.Or(b.At.Compare(a.At), cmp.Compare(b.Src, a.Src), cmp.Compare(b.ID, a.ID))
		})
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
	byID, err := s.st.currencies(ctx, ids)
	if err != nil {
		return err
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

// endOfTime is later than any entry: where a read with no end stops.
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// sideEnd is where the read of the side src stops (exclusive, in (at, id)
// order): at the time range's end, or at the cursor's position if it
// comes first. In the merged order (at DESC, src DESC, id DESC), the
// cursor's own side resumes after the cursor's id; a side whose source
// sorts before the cursor's resumes at the cursor's instant, its entries
// there not shown yet; one whose source sorts after it, just before it.
func sideEnd(src string, f AuditFilter, cur *auditCursor) position {
	end := position{at: endOfTime, id: math.MaxInt64}
	if !f.To.IsZero() {
		end = position{at: f.To.UTC(), id: math.MinInt64}
	}
	if cur == nil {
		return end
	}
	c := position{at: cur.at, id: cur.id}
	switch {
	case src < cur.src:
		c.id = math.MaxInt64
	case src > cur.src:
		c.id = math.MinInt64
	}
	if c.at.Before(end.at) || c.at.Equal(end.at) && c.id < end.id {
		return c
	}
	return end
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
	Currency string
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
	// Only a cursor this log could have returned: a time both databases
	// hold alike (storable.Time), spelled as encode spells it.
	c := auditCursor{at: time.UnixMicro(micros).UTC(), src: parts[2], id: id}
	if !storable.Time(c.at) || c.encode() != s {
		return auditCursor{}, bad
	}
	return c, nil
}
