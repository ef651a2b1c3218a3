package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cmpay/cmpay/apierror"
)

// DefaultMaxBodyBytes caps request bodies: a payment is a few hundred bytes,
// a large GraphQL query a few kilobytes.
const DefaultMaxBodyBytes = 1 << 20

// limitBody refuses bodies over max with 413 before any handler reads them.
// A body of unknown length (chunked) is read up to the cap here, so the
// refusal is a clean 413 rather than an error halfway through decoding.
func limitBody(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				tooLarge(w, r, max)
				return
			}
			if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
				buf, err := io.ReadAll(io.LimitReader(r.Body, max+1))
				if err != nil {
					tooLarge(w, r, max) // the client stopped sending; it will not read this
					return
				}
				if int64(len(buf)) > max {
					tooLarge(w, r, max)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(buf))
				r.ContentLength = int64(len(buf))
			}
			r.Body = http.MaxBytesReader(w, r.Body, max)
			next.ServeHTTP(w, r)
		})
	}
}

func tooLarge(w http.ResponseWriter, r *http.Request, max int64) {
	st := styleProblem
	if strings.HasPrefix(r.URL.Path, "/graphql") {
		st = styleGraphQL
	}
	writeError(w, r, st, apierror.Error{Code: apierror.TooLarge, Status: http.StatusRequestEntityTooLarge,
		Message: fmt.Sprintf("the request body is larger than %d bytes", max)})
}
