package apierror

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cmpay/cmpay/requestid"
)

// badTextMessages are the PostgreSQL errors that mean the request carried
// a value the database cannot take as text or as its column's type, with
// what the client is told. SQLite takes such values and finds nothing, so
// they reach PostgreSQL only where an input check is missing; answering
// 500 for them would blame the server for the client's bytes.
var badTextMessages = map[string]string{
	// character_not_in_repertoire: a NUL byte, or bytes that are not UTF-8.
	"22021": "a value holds a NUL character or bytes that are not UTF-8, which no stored value has",
	// untranslatable_character: a character the database's encoding lacks.
	"22P05": "a value holds a character that cannot be stored",
	// invalid_text_representation: text that is not of its column's type.
	"22P02": "a value is not in the form it must have",
}

// badText is what the client is told when err is the database refusing a
// value the request carried, and whether it is.
func badText(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	msg, ok := badTextMessages[pgErr.Code]
	return msg, ok
}

// fromBadText is BAD_USER_INPUT for a value the database refused. It is
// logged at WARN with the full error: the input check that should have
// refused it first is missing.
func fromBadText(ctx context.Context, err error, msg string) Error {
	slog.WarnContext(ctx, "the database refused a value of the request", "request_id", requestid.From(ctx), "err", err)
	return Error{Code: BadUserInput, Status: http.StatusBadRequest, Message: msg}
}
