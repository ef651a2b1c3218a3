package payments

import (
	"context"
	"fmt"
	"slices"
)

// ChangeStatementAnswers runs reqs as one change statement, as the batcher
// sends requests that arrive together, and says what the store answered
// each: "settled OUTCOME", "held", "not applied", "retry", "not found" or
// "forbidden". For tests of what one statement decides, which the batcher
// otherwise groups by timing.
func ChangeStatementAnswers(ctx context.Context, s *Service, reqs ...RefundRequest) ([]string, error) {
	jobs := make([]*job, len(reqs))
	for i, r := range reqs {
		cmd, err := r.command()
		if err != nil {
			return nil, err
		}
		jobs[i] = &job{cmd: cmd, answer: make(chan answer, 1)}
	}
	statement := slices.Clone(jobs)
	slices.SortFunc(statement, byPayment)
	if err := s.store.changeBatch(ctx, statement); err != nil {
		return nil, err
	}
	out := make([]string, len(jobs))
	for i, j := range jobs {
		a := <-j.answer
		switch a.kind {
		case answerSettled:
			out[i] = fmt.Sprintf("settled %s", a.outcome)
		case answerHeld:
			out[i] = "held"
		case answerNotApplied:
			out[i] = "not applied"
		case answerRetry:
			out[i] = "retry"
		case answerNotFound:
			out[i] = "not found"
		case answerForbidden:
			out[i] = "forbidden"
		default:
			out[i] = fmt.Sprintf("kind %d, error %v", a.kind, a.err)
		}
	}
	return out, nil
}
