// Package suggest finds the name a client most likely meant when it sent
// one CMPay does not know: a misspelt JSON field, an enum value in the
// wrong letter case. REST bodies, GraphQL variables and enum errors all
// use it, so the same typo gets the same hint whichever way it came.
//
// The distance is gqlparser's port of graphql-js's suggestionList (a
// Damerau-Levenshtein distance where any change of letter case counts as one
// edit), so a REST hint matches what GraphQL's own validation says for the
// same typo written inline.
package suggest

import (
	"strings"

	"github.com/vektah/gqlparser/v2/validator/core"
)

// Closest returns the options close enough to input to be what was meant,
// the closest first; nil when none is.
func Closest(input string, options []string) []string {
	return core.SuggestionList(input, options)
}

// DidYouMean is ` Did you mean "a"?` for the option closest to input, in
// GraphQL validation's words; "" when none is close. One name, not every
// close one: "amuont" is nearer to amount than to count, and a list would
// leave the reader to work that out.
func DidYouMean(input string, options []string) string {
	closest := Closest(input, options)
	if len(closest) == 0 {
		return ""
	}
	return " Did you mean " + core.QuotedOrList(closest[0]) + "?"
}

// CaseOnly returns the option that differs from input in letter case only
// ("pix" for "PIX"), and whether there is one.
func CaseOnly(input string, options []string) (string, bool) {
	for _, o := range options {
		if o != input && strings.EqualFold(o, input) {
			return o, true
		}
	}
	return "", false
}
