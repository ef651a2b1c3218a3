package payments

import (
	"context"
	"fmt"
	"slices"
)

// ChangeStatementAnswers runs reqs as one change statement, as the batcher
// sends requests that arrive together, and says what the store answered
// each: "settled OUTCOME", "not applied", "retry", "not found",
// "forbidden", or for a held key "held, then " and what the engine made of
// it. For tests of what one statement decides, which the batcher otherwise
// groups by timing. Requests the batcher would never put in one statement
// (sharing a key or a payment) are refused.
func ChangeStatementAnswers(ctx context.Context, s *Service, reqs ...RefundRequest) ([]string, error) {
	jobs := make([]*job, len(reqs))
	seen := map[string]bool{}
	for i, r := range reqs {
		cmd, err := r.command()
		if err != nil {
			return nil, err
		}
		jobs[i] = &job{cmd: cmd, answer: make(chan answer, 1)}
		for _, k := range jobs[i].batchKeys() {
			if seen[k] {
				return nil, fmt.Errorf("two requests share %q: the batcher never sends them together", k)
			}
			seen[k] = true
		}
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
			settled, err := s.judge(ctx, j.cmd, a)
			if err == nil && settled.kind == answerSettled {
				_, err = s.finish(j.cmd, settled)
				out[i] = fmt.Sprintf("held, then settled %s", settled.outcome)
			} else {
				out[i] = fmt.Sprintf("held, then kind %d", settled.kind)
			}
			if err != nil {
				out[i] += fmt.Sprintf(" (%v)", err)
			}
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
