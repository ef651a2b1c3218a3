package payments

import (
	"errors"
	"log/slog"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// Processor calls in the logs. A call that settles nothing (no answer, a
// 5xx, a 409 or 429, a dropped connection) is told at WARN with its
// operation, payment and class, and recovery's settling or giving up at
// INFO or WARN. Lines are sampled per class (logrepeat.Sampler, one
// minute): at 30 % faults and 1,000 requests a second a line per call is
// 300 lines a second, which buries everything else, while the first of a
// class says what is going on and the count says how much; the calls
// themselves stay in each payment's processorCalls and in the metrics.

// The classes of a processor call that settled nothing (outcome.class),
// as the log lines name them.
const (
	classTimeout     = "timeout"
	classCanceled    = "canceled"
	classConnection  = "connection"
	class5xx         = "5xx"
	class429         = "429"
	class409         = "409"
	classCredentials = "credentials"
	classMismatch    = "idempotency_mismatch"
	classNotFound    = "not_found"
	classBadResponse = "bad_response"
	classUnknown     = "unknown"
)

// The classes of recovery's own lines: an unknown outcome settled, an
// operation sent again under a new key, a day-old create declined, an
// operation not asked because setting its lease left too little time.
const (
	classSettled    = "settled"
	classNewKey     = "new_key"
	classNotCreated = "not_created"
	classLeaseLate  = "lease_late"
)

// errorClass is the class of a failed call's err for the log lines; ""
// for an error that is no failure of the call (a refusal, a processor that
// keeps no records).
func errorClass(err error) string {
	var pe *processor.Error
	if !errors.As(err, &pe) {
		return classUnknown
	}
	switch pe.Kind {
	case processor.KindTimeout:
		return classTimeout
	case processor.KindCanceled:
		return classCanceled
	case processor.KindNetwork:
		return classConnection
	case processor.KindServerError:
		return class5xx
	case processor.KindRateLimited:
		return class429
	case processor.KindInProgress:
		if pe.HTTPStatus == 429 { // Stripe's lock_timeout
			return class429
		}
		return class409
	case processor.KindAuthentication:
		return classCredentials
	case processor.KindIdempotencyMismatch:
		return classMismatch
	case processor.KindNotFound:
		return classNotFound
	case processor.KindBadResponse:
		return classBadResponse
	case processor.KindUnknownError:
		return classUnknown
	}
	return "" // declined, invalid request, unsupported
}

// called counts a call of op (kind WRITE or READ) that came to out, and
// logs it if it failed.
func (s *Service) called(op operationRow, kind string, out outcome, took time.Duration) {
	s.onCall(op.operation, out.call, took)
	if out.settled || out.class == "" {
		return
	}
	msg := "processor call failed; recovery will resolve it"
	if out.class == classCredentials {
		msg = "processor refused CMPay's credentials; operations wait until its API key is fixed"
	}
	args := []any{"operation", string(op.operation), "payment_id", op.paymentID, "operation_id", op.id,
		"call", kind, "code", out.code, "took_ms", took.Milliseconds()}
	// Both are read next, then sent again under a new key (resend.go).
	switch {
	case out.next == nextStored && out.class == classMismatch:
		args = append(args, "mismatch", true) // the key's first request asked for something else
	case out.next == nextStored:
		args = append(args, "stored", true) // its key's answer is a stored error
	}
	s.calls.Log(slog.LevelWarn, out.class, msg, args...)
}

// strayCalled counts a read of a stray (duplicates.go), a payment or
// refund at the processor other than the payment's own, or the late
// check's search for them (latecheck.go), as a READ call of op that came
// to out. It is a real call, so the metrics count it; no processor_calls
// row is stored, since it settles no operation of the payment's. A failed
// one is not logged here: its error keeps the event unapplied, and the
// intake's retries log it, or fails the late check's round, which logs it.
func (s *Service) strayCalled(op Operation, out outcome, took time.Duration) {
	s.onCall(op, out.call, took)
}

// settledByRecovery logs an operation whose outcome was unknown and that
// recovery (or a request's own late answer, or an event) has just settled
// in state; a create's payment in status.
func (s *Service) settledByRecovery(op operationRow, state string, status Status) {
	args := []any{"operation", string(op.operation), "payment_id", op.paymentID, "operation_id", op.id, "state", state}
	if op.operation == OpCreate {
		args = append(args, "status", string(status))
	}
	s.calls.Log(slog.LevelInfo, classSettled, "processor operation with an unknown outcome settled", args...)
}

// sentAgainLog logs recovery's sending op again under a new key.
func (s *Service) sentAgainLog(op operationRow, key string) {
	s.calls.Log(slog.LevelInfo, classNewKey, "processor operation sent again under a new key: the processor shows it not done",
		"operation", string(op.operation), "payment_id", op.paymentID, "operation_id", op.id, "key", key)
}

// leaseLateLog logs recovery's leaving op to a later claim, the statement
// that set its lease having left only left of PROCESSOR_TIMEOUT
// (leasedCall): a database that is this slow every time keeps op from being
// asked at all, which nothing else would show.
func (s *Service) leaseLateLog(op operationRow, left time.Duration) {
	s.calls.Log(slog.LevelWarn, classLeaseLate,
		"processor recovery left an operation to a later claim: setting its lease left too little of the timeout",
		"operation", string(op.operation), "payment_id", op.paymentID, "operation_id", op.id,
		"left_ms", left.Milliseconds(), "timeout_ms", s.timeout.Milliseconds())
}

// notCreatedLog logs recovery's giving up on a create a day old that the
// processor never made: declined (DeclineNotCreated).
func (s *Service) notCreatedLog(op operationRow) {
	s.calls.Log(slog.LevelWarn, classNotCreated, "processor recovery declined a day-old create the processor never made",
		"operation", string(op.operation), "payment_id", op.paymentID, "operation_id", op.id, "code", DeclineNotCreated)
}
