package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/graph/model"
)

// maxDepthRule refuses operations whose selections nest deeper than limit.
// The deepest useful query here (payments → edges → node → attempts →
// outcome) has depth 5. Introspection (__schema, __type) is left to
// gqlparser's own introspection depth rule: GraphiQL's schema query nests
// deeply by design.
func maxDepthRule(limit int) core.Rule {
	return core.Rule{
		Name: "MaxQueryDepth",
		RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
			var w *depthWalk
			observers.OnOperation(func(walker *core.Walker, op *ast.OperationDefinition) {
				if w == nil { // one walk per document: fragments are shared by its operations
					w = newDepthWalk(walker.Document.Fragments)
				}
				if d := w.depth(op.SelectionSet); d > limit {
					addError(
						core.Message("query depth %d exceeds the limit of %d; split it into smaller queries", d, limit),
						core.At(op.Position),
					)
				}
			})
		},
	}
}

// depthWalk measures how deeply selections nest, each fragment once: a
// fragment's depth is the same wherever it is spread, and walking it again
// at every spread made a ladder of fragments that each spread the next
// twice cost 2^n walks (30 rungs, 1.2 KB, took 404 s).
type depthWalk struct {
	fragmentMemo
	steps int // selections looked at, for tests
}

func newDepthWalk(fragments ast.FragmentDefinitionList) *depthWalk {
	return &depthWalk{fragmentMemo: newFragmentMemo(fragments)}
}

func (w *depthWalk) depth(set ast.SelectionSet) int {
	deepest := 0
	for _, sel := range set {
		w.steps++
		d := 0
		switch sel := sel.(type) {
		case *ast.Field:
			if sel.Name == "__schema" || sel.Name == "__type" {
				continue
			}
			d = 1 + w.depth(sel.SelectionSet)
		case *ast.InlineFragment:
			d = w.depth(sel.SelectionSet)
		case *ast.FragmentSpread:
			d = w.fragment(sel.Name)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// fragment is the depth of the named fragment's selections.
func (w *depthWalk) fragment(name string) int { return w.of(name, w.depth) }

// fragmentMemo is a measure of a document's fragments, each computed
// once. Cycles are refused by another rule; here they must only not loop:
// a fragment met inside itself counts for nothing, so a cyclic document's
// measure may come out short, and it is refused anyway.
type fragmentMemo struct {
	fragments ast.FragmentDefinitionList
	known     map[string]int
	visiting  map[string]bool
}

func newFragmentMemo(fragments ast.FragmentDefinitionList) fragmentMemo {
	return fragmentMemo{fragments: fragments, known: map[string]int{}, visiting: map[string]bool{}}
}

// of is the measure of the named fragment's selections, computed the first
// time it is asked for.
func (m *fragmentMemo) of(name string, measure func(ast.SelectionSet) int) int {
	if n, ok := m.known[name]; ok {
		return n
	}
	frag := m.fragments.ForName(name)
	if frag == nil || m.visiting[name] {
		return 0
	}
	m.visiting[name] = true
	n := measure(frag.SelectionSet)
	delete(m.visiting, name)
	m.known[name] = n
	return n
}

// maxFieldsRuleName names the rule that counts a document's fields; its
// refusals are answered with codeTooComplex (see presentError).
const maxFieldsRuleName = "MaxFields"

// maxFields is how many fields one operation may expand to, every
// fragment spread in place (list sizes do not multiply it: that is what
// complexity prices). GraphiQL's schema query expands to 226 and one
// __schema root (introspectionFields); a query of every field of a
// payment, its lists included, to under 100.
const maxFields = 10_000

// introspectionFields is what an introspection root counts for besides its
// own selection: what __schema answers grows with the schema, not with the
// document (about 50 KB for a few fields of every type), and gqlgen's
// complexity walk does not price anything under it, so 995 aliases of one
// in 20 KB answered 51 MB in 9 s. With maxFields, an operation holds three
// __schema roots at most; __type answers one type.
var introspectionFields = map[string]int{"__schema": 3_000, "__type": 100}

// maxFieldsRule refuses an operation that expands to more than limit
// fields once its fragments are spread, introspection included (its roots
// weighed by introspectionFields). Fragments
// let a 1 KB document stand for 2^30 fields, and gqlgen's complexity
// extension walks every one of them before it can refuse the operation (27
// rungs held a core for over a minute); this rule counts each fragment
// once, so it refuses such a document during validation, before the
// complexity walk and execution ever see it.
func maxFieldsRule(limit int) core.Rule {
	return core.Rule{
		Name: maxFieldsRuleName,
		RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
			var c *fieldCount
			observers.OnOperation(func(walker *core.Walker, op *ast.OperationDefinition) {
				if c == nil { // one count per document: fragments are shared by its operations
					c = newFieldCount(walker.Document.Fragments, limit)
				}
				if n := c.fields(op.SelectionSet); n > limit {
					addError(core.Message("%s", maxFieldsRefusal(limit)), core.At(op.Position))
				}
			})
		},
	}
}

// maxFieldsRefusal is what an operation over maxFields is told, by the
// rule or before validation (documentCost).
func maxFieldsRefusal(limit int) string {
	return fmt.Sprintf("the operation selects more than %d fields once its fragments are spread; "+
		"ask for less in one request", limit)
}

// fieldCount counts the fields a selection set expands to, each fragment
// counted once. Counts stop growing just past limit, so that a ladder of
// a hundred rungs cannot overflow an int.
type fieldCount struct {
	fragmentMemo
	limit int
	steps int // selections looked at, for tests
}

func newFieldCount(fragments ast.FragmentDefinitionList, limit int) *fieldCount {
	return &fieldCount{fragmentMemo: newFragmentMemo(fragments), limit: limit}
}

func (c *fieldCount) fields(set ast.SelectionSet) int {
	n := 0
	for _, sel := range set {
		c.steps++
		switch sel := sel.(type) {
		case *ast.Field:
			n += 1 + introspectionFields[sel.Name] + c.fields(sel.SelectionSet)
		case *ast.InlineFragment:
			n += c.fields(sel.SelectionSet)
		case *ast.FragmentSpread:
			n += c.fragment(sel.Name)
		}
		n = min(n, c.limit+1)
	}
	return n
}

// fragment is the count of the named fragment's fields.
func (c *fieldCount) fragment(name string) int { return c.of(name, c.fields) }

// noIntrospectionRule refuses __schema and __type when introspection is
// switched off, with an error that says so, before anything executes.
var noIntrospectionRule = core.Rule{
	Name: "NoIntrospection",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnField(func(_ *core.Walker, field *ast.Field) {
			if field.Name == "__schema" || field.Name == "__type" {
				addError(
					core.Message("introspection is switched off on this server (GRAPHQL_INTROSPECTION=false)"),
					core.At(field.Position),
				)
			}
		})
	},
}

// codeTooComplex is the code gqlgen's complexity limit uses.
const codeTooComplex = "COMPLEXITY_LIMIT_EXCEEDED"

// listMultiplier is how many items complexity assumes a list holds when
// the client does not say: webhookEndpoints, and a payment's attempts,
// refunds or processor calls without first or last (see listSize). One:
// what such a list really carries is bounded by the response's list budget
// (withListBudget), not by this estimate, and pricing it as 10 items made
// the contract's page of 100 payments with every field cost 23,831, so
// that even 38 with the v1 fields alone were refused.
const listMultiplier = 1

// queryCost is what a root field that reads the database costs besides
// its fields: each alias of it is a query of its own, so that 450 aliases
// of payments(first: 1), a few fields but 450 queries, do not pass for
// cheap (they took 341 ms and slowed every create). With the default
// limit of 6,000, about 180 such reads fit in one operation.
const queryCost = 30

// complexity prices lists by their size, so that a query cannot ask for a
// hundred payments with a hundred fields each and slip under the limit,
// and every root field that reads the database by its query.
func complexity() ComplexityRoot {
	var c ComplexityRoot
	c.Query.Payments = func(child int, _ *model.PaymentFilter, first *int, _ *string) int {
		n := 20
		if first != nil && *first > 0 {
			n = *first
		}
		return queryCost + 1 + n*child
	}
	c.Query.Payment = func(child int, _ string) int { return queryCost + 1 + child }
	c.Query.WebhookEndpoints = func(child int) int { return queryCost + 1 + listMultiplier*child }
	c.Payment.Attempts = func(child int, first, last *int) int { return 1 + listSize(first, last)*child }
	c.Payment.Refunds = func(child int, first, last *int) int { return 1 + listSize(first, last)*child }
	c.Payment.ProcessorCalls = func(child int, first, last *int) int { return 1 + listSize(first, last)*child }
	return c
}

// Document limits. Parsing costs time in proportion to a document's tokens,
// and the spec's OverlappingFieldsCanBeMerged validation compares every two
// fields with one response name, again for their subfields, and so on down:
// `{ x x x … }` with 8,000 fields took 2 s, 20 repeats nested three deep 4 s,
// on one core. So a document is capped by bytes and by tokens before it is
// parsed, and its overlap comparisons are counted (cheaply, with the same
// bound) before the rule runs.
const (
	// DefaultMaxQueryBytes caps the query text. GraphiQL's schema query is
	// 2 KB; large hand-written queries stay under 10 KB.
	DefaultMaxQueryBytes = 64 << 10
	// DefaultMaxTokens caps the parser's tokens (names, punctuation,
	// values). GraphiQL's schema query has about 300.
	DefaultMaxTokens = 10_000
	// overlapBudget is how many field comparisons the overlap rule may
	// make; about 60 ns each, so a few milliseconds at most.
	overlapBudget = 100_000
	// maxErrors is how many errors a response carries at most: the first
	// ones tell a client what to fix, thousands more only cost memory.
	maxErrors = 25
)

// requestLimits refuses a request before its document is parsed when the
// query text is too long, and drops a request whose client has gone away
// before it is parsed or run: nobody would read the answer.
type requestLimits struct{ maxBytes int }

func (requestLimits) ExtensionName() string                   { return "RequestLimits" }
func (requestLimits) Validate(graphql.ExecutableSchema) error { return nil }

func (l requestLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if err := clientGone(ctx); err != nil {
		return err
	}
	if len(p.Query) > l.maxBytes {
		err := gqlerror.Errorf("the query is %d bytes long; the limit is %d", len(p.Query), l.maxBytes)
		errcode.Set(err, errcode.ParseFailed)
		return err
	}
	return nil
}

func (requestLimits) MutateOperationContext(ctx context.Context, _ *graphql.OperationContext) *gqlerror.Error {
	return clientGone(ctx)
}

func clientGone(ctx context.Context) *gqlerror.Error {
	if ctx.Err() == nil {
		return nil
	}
	err := gqlerror.Errorf("the request was canceled before it ran")
	errcode.Set(err, apierror.BadRequest)
	return err
}

// boundedOverlapRule is the spec's OverlappingFieldsCanBeMerged rule, run
// only when a count of the comparisons it could make stays within budget;
// otherwise the document is refused with one error. The rule runs in a
// walk of its own over the document, so that the count comes first.
func boundedOverlapRule(budget int) core.Rule {
	return core.Rule{
		Name: rules.OverlappingFieldsCanBeMergedRule.Name,
		RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
			inner := &core.Events{}
			rules.OverlappingFieldsCanBeMergedRule.RuleFunc(inner, addError)
			done := false
			// The first operation seen: the whole document is checked
			// then, once.
			observers.OnOperation(func(walker *core.Walker, op *ast.OperationDefinition) {
				if done {
					return
				}
				done = true
				if !withinOverlapBudget(walker.Document, budget) {
					addError(core.Message("%s", overlapRefusal(budget)), core.At(op.Position))
					return
				}
				core.Walk(walker.Schema, walker.Document, inner)
			})
		},
	}
}

// overlapRefusal is what a document over the overlap rule's budget is
// told, by the rule or before validation (documentCost).
func overlapRefusal(budget int) string {
	return fmt.Sprintf("the document repeats fields too often to be checked: give repeated fields "+
		"aliases or select them once (more than %d comparisons of same-named fields)", budget)
}

// overlapCounter counts, without comparing anything, the pairs of fields
// the overlap rule would compare: in every selection set, each two fields
// with one response name (fragments spread in place), and for each such
// pair, the same again between their subfields. Every step spends budget,
// so counting stops, and the document is refused, once it is spent.
type overlapCounter struct {
	fragments map[string]*ast.FragmentDefinition
	left      int
	calls     int // spends, each a bounded piece of work: for tests
}

func newOverlapCounter(doc *ast.QueryDocument, budget int) *overlapCounter {
	c := &overlapCounter{fragments: make(map[string]*ast.FragmentDefinition, len(doc.Fragments)), left: budget}
	for _, f := range doc.Fragments {
		if _, ok := c.fragments[f.Name]; !ok { // the first of duplicates, as gqlparser's walk
			c.fragments[f.Name] = f
		}
	}
	return c
}

func withinOverlapBudget(doc *ast.QueryDocument, budget int) bool {
	c := newOverlapCounter(doc, budget)
	for _, op := range doc.Operations {
		if !c.everySet(op.SelectionSet) {
			return false
		}
	}
	for _, f := range doc.Fragments {
		if !c.everySet(f.SelectionSet) {
			return false
		}
	}
	return true
}

func (c *overlapCounter) spend(n int) bool {
	c.calls++
	c.left -= n
	return c.left >= 0
}

// everySet counts the comparisons within set and within every selection
// set written inside it.
func (c *overlapCounter) everySet(set ast.SelectionSet) bool {
	if !c.within(set) {
		return false
	}
	for _, sel := range set {
		var inner ast.SelectionSet
		switch sel := sel.(type) {
		case *ast.Field:
			inner = sel.SelectionSet
		case *ast.InlineFragment:
			inner = sel.SelectionSet
		}
		if len(inner) > 0 && !c.everySet(inner) {
			return false
		}
	}
	return true
}

// within counts the comparisons between the same-named fields of one set.
func (c *overlapCounter) within(set ast.SelectionSet) bool {
	byName, ok := c.collect(set)
	if !ok {
		return false
	}
	for _, fields := range byName {
		k := len(fields)
		if !c.spend(k * (k - 1) / 2) { // before comparing any: a flat repeat costs nothing to refuse
			return false
		}
		for i, a := range fields {
			for _, b := range fields[i+1:] {
				if !c.between(a.SelectionSet, b.SelectionSet) {
					return false
				}
			}
		}
	}
	return true
}

// between counts the comparisons between the subfields of two fields.
func (c *overlapCounter) between(a, b ast.SelectionSet) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	byNameA, ok := c.collect(a)
	if !ok {
		return false
	}
	byNameB, ok := c.collect(b)
	if !ok {
		return false
	}
	for name, fieldsA := range byNameA {
		fieldsB := byNameB[name]
		if !c.spend(len(fieldsA) * len(fieldsB)) {
			return false
		}
		for _, fa := range fieldsA {
			for _, fb := range fieldsB {
				if !c.between(fa.SelectionSet, fb.SelectionSet) {
					return false
				}
			}
		}
	}
	return true
}

// collect groups a set's fields by response name, with inline fragments and
// fragment spreads opened in place (a spread inside itself is not opened
// again: another rule refuses cycles).
func (c *overlapCounter) collect(set ast.SelectionSet) (map[string][]*ast.Field, bool) {
	byName := map[string][]*ast.Field{}
	return byName, c.collectInto(set, byName, map[string]bool{})
}

func (c *overlapCounter) collectInto(set ast.SelectionSet, byName map[string][]*ast.Field, open map[string]bool) bool {
	for _, sel := range set {
		if !c.spend(1) {
			return false
		}
		switch sel := sel.(type) {
		case *ast.Field:
			name := sel.Alias
			if name == "" {
				name = sel.Name
			}
			byName[name] = append(byName[name], sel)
		case *ast.InlineFragment:
			if !c.collectInto(sel.SelectionSet, byName, open) {
				return false
			}
		case *ast.FragmentSpread:
			f := c.fragments[sel.Name]
			if f == nil || open[sel.Name] {
				continue
			}
			open[sel.Name] = true
			ok := c.collectInto(f.SelectionSet, byName, open)
			delete(open, sel.Name)
			if !ok {
				return false
			}
		}
	}
	return true
}

// capErrors keeps the first maxErrors-1 errors of a response and replaces
// the rest with one that says how many were left out, under the code of
// the first one left out.
func capErrors(resp *graphql.Response) *graphql.Response {
	if resp == nil || len(resp.Errors) <= maxErrors {
		return resp
	}
	kept := resp.Errors[: maxErrors-1 : maxErrors-1]
	left := resp.Errors[maxErrors-1:]
	summary := &gqlerror.Error{
		Message:    fmt.Sprintf("%d more errors are not shown; fix the ones above first", len(left)),
		Extensions: map[string]any{"code": left[0].Extensions["code"]},
	}
	resp.Errors = append(kept, summary)
	return resp
}
