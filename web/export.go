package web

import (
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
	"github.com/cmpay/cmpay/staff"
)

// csvHeader is the export's first row.
var csvHeader = []string{"id", "created_at", "client_id", "amount", "currency", "method", "status",
	"captured_amount", "refunded_amount", "idempotency_key", "replay_count", "rejected_count"}

// exportPath is the CSV export's route.
const exportPath = "/admin/payments.csv"

// exportFlushRows is how many rows go out per flush: about 100 KB.
const exportFlushRows = 1000

// exportWriteTime is how long the client gets to take each flush's rows.
// The server's WriteTimeout (30 s) bounds a whole response; an export of
// a million rows takes longer, so each flush moves the deadline on, and
// only a client that stops reading is cut off.
const exportWriteTime = 30 * time.Second

// export streams every payment the list's filters match as RFC 4180 CSV
// (CRLF line ends, quoting where needed), newest first, in constant memory:
// payments.Export reads keyset pages of 1,000 and rows are flushed to the
// client as they go. It is audited before the first row leaves (an export
// that cannot be audited does not start) and again when it ends, with the
// number of rows sent, or how it failed.
func (a *admin) export(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, _ := sessionFrom(ctx)
	who := sess.Actor(a.addr(r))
	form := parseFilterForm(r.URL.Query())
	target := form.csvURL()
	filter, err := form.filter()
	if err != nil {
		a.exportRefused(w, r, who, target, err)
		return
	}
	// Audit writes outlive a client that went away mid-export (staff.Record).
	if err := a.staff.Record(ctx, who, staff.ActExport, target, staff.OutcomeStarted, ""); err != nil {
		serverError(w, r, err)
		return
	}

	rc := http.NewResponseController(w)
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	rows, started := 0, false
	start := func() {
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8; header=present")
		h.Set("Content-Disposition", `attachment; filename="payments-`+time.Now().UTC().Format("20060102T150405Z")+`.csv"`)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_ = cw.Write(csvHeader)
	}
	record := make([]string, len(csvHeader))
	for p, err := range a.svc.Export(ctx, filter) {
		if err != nil {
			if !started {
				a.exportRefused(w, r, who, target, err)
				return
			}
			// Headers are gone: the only honest signal left is a broken
			// download, never a short file that looks complete.
			detail := "stopped after " + strconv.Itoa(rows) + " rows: "
			if ctx.Err() != nil {
				detail += "the client went away"
			} else {
				detail += "internal error; request id " + requestid.From(ctx)
				a.log.ErrorContext(ctx, "export failed", "request_id", requestid.From(ctx), "err", err)
			}
			_ = a.staff.Record(ctx, who, staff.ActExport, target, staff.OutcomeFailed, detail)
			panic(http.ErrAbortHandler)
		}
		if !started {
			start()
		}
		_ = cw.Write(csvRecord(record, p))
		if rows++; rows%exportFlushRows == 0 {
			cw.Flush()
			_ = rc.Flush()
			_ = rc.SetWriteDeadline(time.Now().Add(exportWriteTime))
			// The session may have ended meanwhile (sign-out, account
			// disabled, expiry): then so does the export, as a broken
			// download. One primary-key read per thousand rows.
			if _, err := a.session(r); errors.Is(err, staff.ErrNoSession) {
				_ = a.staff.Record(ctx, who, staff.ActExport, target, staff.OutcomeFailed,
					"stopped after "+strconv.Itoa(rows)+" rows: the session ended")
				panic(http.ErrAbortHandler)
			}
		}
	}
	if !started {
		start()
	}
	cw.Flush()
	outcome, detail := staff.OutcomeOK, strconv.Itoa(rows)+" rows"
	if err := cw.Error(); err != nil {
		outcome, detail = staff.OutcomeFailed, "stopped after about "+strconv.Itoa(rows)+" rows: the client went away"
	}
	_ = a.staff.Record(ctx, who, staff.ActExport, target, outcome, detail)
}

// exportRefused answers an export that could not start (a bad filter) and
// audits it.
func (a *admin) exportRefused(w http.ResponseWriter, r *http.Request, who staff.Actor, target string, err error) {
	var bad badFilter
	if !errors.As(err, &bad) && !errors.Is(err, payments.ErrInvalidInput) {
		_ = a.staff.Record(r.Context(), who, staff.ActExport, target, staff.OutcomeError, "internal error; request id "+requestid.From(r.Context()))
		serverError(w, r, err)
		return
	}
	if err := a.staff.Record(r.Context(), who, staff.ActExport, target, staff.OutcomeFailed, err.Error()); err != nil {
		serverError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte("The export's filters are not valid: " + err.Error() + "\n"))
}

// csvRecord fills record with p's cells.
func csvRecord(record []string, p payments.Payment) []string {
	record[0] = cell(p.ID)
	record[1] = p.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z")
	record[2] = cell(p.ClientID)
	record[3] = p.Amount.String()
	record[4] = cell(p.Amount.Currency)
	record[5] = cell(string(p.Method))
	record[6] = cell(string(p.Status))
	record[7] = p.Captured.String()
	record[8] = p.Refunded.String()
	record[9] = cell(p.IdempotencyKey)
	record[10] = strconv.Itoa(p.ReplayCount)
	record[11] = strconv.Itoa(p.RejectedCount)
	return record
}

// cell neutralises a text cell a spreadsheet would run as a formula: one
// starting with =, +, - or @, after any spaces (a no-break space too),
// tabs or line breaks, which some spreadsheets skip before looking for
// those, gets a leading apostrophe, so it shows as the text it is. Client
// ids and idempotency keys are the clients' own text, and may start with
// anything printable.
func cell(s string) string {
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	if rest != "" && strings.ContainsRune("=+-@", rune(rest[0])) || s != "" && strings.ContainsRune("\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
