package payments

import (
	"errors"
	"fmt"
	"strings"
)

// The errors callers branch on. Every error this package returns for a
// client's mistake unwraps to one of them; anything else is internal.
var (
	// ErrInvalidInput: the request is malformed; nothing was written.
	ErrInvalidInput = errors.New("invalid input")
	// ErrKeyReused: the idempotency key was used before with another payload.
	ErrKeyReused = errors.New("idempotency key reused with a different payload")
	// ErrNotFound: no payment has that id.
	ErrNotFound = errors.New("not found")
)

// Problem is one thing wrong with a request, named by the API field.
type Problem struct {
	Field   string
	Message string
}

// InvalidInputError lists everything wrong with a request, so a client can
// fix it in one go.
type InvalidInputError struct {
	Problems []Problem
}

func (e *InvalidInputError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

func (e *InvalidInputError) Unwrap() error { return ErrInvalidInput }

// invalid builds an InvalidInputError about one field.
func invalid(field, format string, args ...any) *InvalidInputError {
	return &InvalidInputError{Problems: []Problem{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// KeyReusedError says which payment the key belongs to and which fields of
// the new request differ from it.
type KeyReusedError struct {
	PaymentID       string
	DifferingFields []string
}

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("idempotency key already used for payment %s with a different %s; use a new key for a new payment",
		e.PaymentID, strings.Join(e.DifferingFields, ", "))
}

func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }
