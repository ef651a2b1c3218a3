// Package clientid holds the one rule for comparing client ids: they are
// compared in Unicode Normalization Form C. The same "café" may arrive
// precomposed (NFC) or decomposed (NFD), depending on the software that
// typed it; were the two forms different clients, a client whose retry went
// through other software would own two keys of the same name and pay twice.
package clientid

import "golang.org/x/text/unicode/norm"

// Normalize returns id in Normalization Form C. Every client id is
// normalized before it identifies anything: a key, a token's binding, a
// filter, an endpoint's client.
func Normalize(id string) string { return norm.NFC.String(id) }

// Normalized reports whether id is already in Normalization Form C.
func Normalized(id string) bool { return norm.NFC.IsNormalString(id) }
