package graph

import (
	"fmt"

	"github.com/cmpay/cmpay/payments"
)

// maxListItems is how many items one of a payment's lists (attempts,
// refunds, processor calls) carries in a response at most. A client in a
// retry loop adds an attempt with every replay: 20,000 replays under 30
// aliases answered 87 MB when the lists came whole.
const maxListItems = 100

// window is the part of a payment's list, oldest first, that one response
// carries: the oldest first items, the newest last items, or with neither
// the oldest maxListItems. Asking for more than maxListItems, for fewer
// than none, or with both is refused rather than cut: the client asked for
// something it will not get.
func window[T any](items []T, first, last *int) ([]T, error) {
	if first != nil && last != nil {
		return nil, listArgumentError("first", "give first or last, not both")
	}
	n, fromEnd := maxListItems, false
	switch {
	case first != nil:
		if err := checkListArgument("first", *first); err != nil {
			return nil, err
		}
		n = *first
	case last != nil:
		if err := checkListArgument("last", *last); err != nil {
			return nil, err
		}
		n, fromEnd = *last, true
	}
	if len(items) <= n {
		return items, nil
	}
	if fromEnd {
		return items[len(items)-n:], nil
	}
	return items[:n], nil
}

func checkListArgument(name string, n int) error {
	if n < 0 || n > maxListItems {
		return listArgumentError(name, fmt.Sprintf("%s must be from 0 to %d", name, maxListItems))
	}
	return nil
}

func listArgumentError(field, message string) error {
	return &payments.InvalidInputError{Problems: []payments.Problem{{Field: field, Message: message}}}
}

// listSize is how many items complexity assumes one of a payment's lists
// holds: what the client asked for, or listMultiplier when it did not ask
// (the estimate from before the lists took a bound, kept so that existing
// queries keep within the limit; maxListItems caps what they get).
func listSize(first, last *int) int {
	n := listMultiplier
	switch {
	case first != nil && last != nil:
		return maxListItems // refused when it runs
	case first != nil:
		n = *first
	case last != nil:
		n = *last
	}
	return min(max(n, 0), maxListItems)
}
