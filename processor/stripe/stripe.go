// Package stripe is CMPay's Stripe connector: the processor seam over
// Stripe's API through the official stripe-go client, pointed at
// STRIPE_API_BASE.
//
// A payment is one PaymentIntent, created and confirmed in one request
// (payment_method = the token, confirm=true, capture_method=manual when not
// capturing, metadata[cmpay_payment_id], and for a card
// error_on_requires_action); captures and cancels are its endpoints; a
// refund is one Refund (metadata[cmpay_refund_id]). Every POST carries the
// operation's idempotency key, so asking again is the same request to
// Stripe.
//
// stripe-go's own network retries are off (MaxNetworkRetries 0). They
// would reuse the key, so they are safe, but they sleep between tries
// without watching the context (time.Sleep, 0.5 s to 5 s), so a call could
// outlive PROCESSOR_TIMEOUT; and they would turn a first answer worth
// classifying (a 409, a 500 that Stripe will replay) into a later one.
// CMPay retries through its own recovery, with the same key, after
// PROCESSOR_RECOVERY_AFTER, which also keeps one request per operation in
// flight at a time.
package stripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/processor"
	stripeapi "github.com/stripe/stripe-go/v82"
)

// Connector is the Stripe processor. It is safe for concurrent use.
type Connector struct {
	client *stripeapi.Client
	// backend sends the creates (createIntent); client everything else.
	backend stripeapi.Backend
	key     string
	http    *http.Client
	timeout time.Duration
}

var _ processor.Processor = (*Connector)(nil)

// Option changes a Connector made by New.
type Option func(*stripeapi.BackendConfig)

// WithHTTPClient sends the requests through hc (tests, proxies).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *stripeapi.BackendConfig) { c.HTTPClient = hc }
}

// New makes a connector from the configuration's STRIPE_API_KEY,
// STRIPE_API_BASE and PROCESSOR_TIMEOUT.
// KeyLifetime is how long Stripe remembers an idempotency key: 24 hours,
// after which the same key is a new request. CMPay's recovery stops
// sending a key well before (payments: keyForgotten).
func (c *Connector) KeyLifetime() time.Duration { return 24 * time.Hour }

func New(cfg processor.Config, opts ...Option) (*Connector, error) {
	if cfg.StripeAPIKey == "" {
		return nil, errors.New("stripe connector: STRIPE_API_KEY is required")
	}
	if cfg.Timeout <= 0 {
		return nil, errors.New("stripe connector: PROCESSOR_TIMEOUT must be positive")
	}
	// Its own transport, keeping enough idle connections for concurrent
	// calls (net/http keeps 2 per host by default, and every call over
	// that would open, and soon close, a connection of its own).
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	bc := &stripeapi.BackendConfig{
		URL:               stripeapi.String(cfg.StripeAPIBase),
		MaxNetworkRetries: stripeapi.Int64(0),
		EnableTelemetry:   stripeapi.Bool(false),
		LeveledLogger:     &stripeapi.LeveledLogger{Level: stripeapi.LevelNull},
		HTTPClient:        &http.Client{Transport: sizedBodies{transport}},
	}
	for _, o := range opts {
		o(bc)
	}
	backend := stripeapi.GetBackendWithConfig(stripeapi.APIBackend, bc)
	backends := &stripeapi.Backends{API: backend, Connect: backend, Uploads: backend, MeterEvents: backend}
	return &Connector{
		client:  stripeapi.NewClient(cfg.StripeAPIKey.Reveal(), stripeapi.WithBackends(backends)),
		backend: backend,
		key:     cfg.StripeAPIKey.Reveal(),
		http:    bc.HTTPClient,
		timeout: cfg.Timeout,
	}, nil
}

// sizedBodies sends each request body with its length. stripe-go hands
// net/http its body as a reader of its own type, of no length net/http
// knows, so every POST went out chunked and its headers were flushed apart
// from its body: two writes to the socket per call where one does
// (docs/benchmarks/2026-12-06-stripe-path-cpu.md). The request is the
// same otherwise, GetBody included, which net/http uses to send it again
// on a kept-alive connection that closed before answering.
type sizedBodies struct{ next *http.Transport }

func (t sizedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength != 0 {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	sized := *req // RoundTrip must not change req
	sized.ContentLength, sized.Body = int64(len(body)), io.NopCloser(bytes.NewReader(body))
	if len(body) == 0 {
		sized.Body = http.NoBody
	}
	return t.next.RoundTrip(&sized)
}

// CloseIdleConnections closes the transport's idle connections, as
// http.Client.CloseIdleConnections asks of its transport.
func (t sizedBodies) CloseIdleConnections() { t.next.CloseIdleConnections() }

// CloseIdleConnections closes the connections kept alive to Stripe (at
// shutdown, and in tests).
func (c *Connector) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Name is "stripe".
func (c *Connector) Name() string { return processor.NameStripe }

// call bounds one request by PROCESSOR_TIMEOUT (or ctx's earlier
// deadline) and classifies its error.
func call[T any](ctx context.Context, c *Connector, op string, do func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, err := do(ctx)
	if err != nil {
		return v, classify(ctx, op, err)
	}
	return v, nil
}

func invalid(op, msg string) error {
	return &processor.Error{Kind: processor.KindInvalidRequest, Op: op, Code: "parameter_invalid", Message: msg}
}

// CreatePayment creates and confirms a PaymentIntent.
func (c *Connector) CreatePayment(ctx context.Context, req processor.CreatePaymentRequest) (processor.Payment, error) {
	body, err := createForm(req)
	if err != nil {
		return processor.Payment{}, err
	}
	idemKey := processor.RequestKey(req.IdempotencyKey, "")
	pi, err := call(ctx, c, "create", func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.createIntent(ctx, idemKey, body)
	})
	if err != nil {
		return processor.Payment{}, err
	}
	return paymentFrom(pi), nil
}

// createIntent is V1PaymentIntents.Create, the same call of stripe-go's
// backend (the same request, headers, errors and connection), with the
// body createForm wrote and the answer decoded into only the
// PaymentIntent fields paymentFrom reads. Decoding the whole
// PaymentIntent, through its UnmarshalJSON for expandable fields, took
// about 5% of the server's CPU per create, and encoding its parameters by
// reflection about 3% (docs/benchmarks/2026-12-06-stripe-path-cpu.md,
// docs/benchmarks/2026-12-07-stripe-path-batches-and-tls.md). CallRaw, not
// stripe-go's RawRequest: v82.5.1's RawRequest dereferences a nil response
// on a connection error (TestWriteFaults).
func (c *Connector) createIntent(ctx context.Context, idemKey string, body []byte) (*stripeapi.PaymentIntent, error) {
	params := &stripeapi.Params{Context: ctx, IdempotencyKey: &idemKey}
	var f intentFields
	if err := c.backend.CallRaw(http.MethodPost, "/v1/payment_intents", c.key, body, params, &f); err != nil {
		return nil, err
	}
	return f.intent(), nil
}

// intentFields are the fields of a PaymentIntent that paymentFrom reads,
// with stripe-go's own names and types.
type intentFields struct {
	ID                 string                             `json:"id"`
	Amount             int64                              `json:"amount"`
	AmountReceived     int64                              `json:"amount_received"`
	Currency           stripeapi.Currency                 `json:"currency"`
	Created            int64                              `json:"created"`
	Status             stripeapi.PaymentIntentStatus      `json:"status"`
	Metadata           map[string]string                  `json:"metadata"`
	PaymentMethodTypes []string                           `json:"payment_method_types"`
	LastPaymentError   *stripeapi.Error                   `json:"last_payment_error"`
	NextAction         *stripeapi.PaymentIntentNextAction `json:"next_action"`
}

// intent is a PaymentIntent with f's fields.
func (f *intentFields) intent() *stripeapi.PaymentIntent {
	return &stripeapi.PaymentIntent{ID: f.ID, Amount: f.Amount, AmountReceived: f.AmountReceived, Currency: f.Currency,
		Created: f.Created, Status: f.Status, Metadata: f.Metadata, PaymentMethodTypes: f.PaymentMethodTypes,
		LastPaymentError: f.LastPaymentError, NextAction: f.NextAction}
}

// SetLastResponse is stripe-go's hook for the response's metadata, which
// the connector does not read.
func (*intentFields) SetLastResponse(*stripeapi.APIResponse) {}

// createForm validates a create and writes its PaymentIntent's form:
// byte for byte what stripe-go encodes, by reflection, from the
// PaymentIntentCreateParams that say the same, in its order (its fields',
// alphabetical), for 2 allocations where stripe-go made 71
// (docs/benchmarks/2026-12-07-stripe-path-cuts.md).
// TestCreateFormIsStripeGosEncoding compares the two for every shape of
// create, and TestCreateIntentSendsWhatStripeGoWould the whole requests.
//
// A payment is created and confirmed at once, with its payment method (the
// token, or for a Pix or boleto without one, a new one of that type) and
// its type, and metadata[cmpay_payment_id]; a card authorized only is
// capture_method=manual.
func createForm(req processor.CreatePaymentRequest) ([]byte, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return nil, invalid("create", err.Error())
	}
	if !req.Method.Valid() {
		return nil, invalid("create", "unknown payment method "+string(req.Method))
	}
	amount, err := toStripeAmount(req.AmountMinor, req.Currency)
	if err != nil {
		return nil, invalid("create", err.Error())
	}
	var typ string
	switch {
	case req.Method.Async() && !req.Capture:
		return nil, invalid("create", "Pix and boleto are captured when paid: capture must be true")
	case req.Method == processor.MethodPix:
		typ = "pix"
	case req.Method == processor.MethodBoleto:
		typ = "boleto"
	case req.PaymentMethodToken == "":
		return nil, invalid("create", "a card payment needs a payment method token (pm_…)")
	default:
		typ = "card"
	}
	b := make([]byte, 0, 256)
	b = append(b, "amount="...)
	b = strconv.AppendInt(b, amount, 10)
	if typ == "card" && !req.Capture {
		b = append(b, "&capture_method=manual"...)
	}
	b = append(b, "&confirm=true&currency="...)
	b = append(b, url.QueryEscape(strings.ToLower(req.Currency))...)
	if typ == "card" {
		// CMPay's API has no step where the payer authenticates: a card
		// that asks for 3-D Secure is declined (authentication_required)
		// rather than left waiting in requires_action for good.
		b = append(b, "&error_on_requires_action=true"...)
	}
	b = append(b, "&metadata[cmpay_payment_id]="...)
	b = append(b, url.QueryEscape(req.PaymentID)...)
	if req.PaymentMethodToken != "" {
		b = append(b, "&payment_method="...)
		b = append(b, url.QueryEscape(req.PaymentMethodToken)...)
	} else {
		// Boleto at Stripe also needs the payer's name, e-mail, address
		// and tax id: a client-side PaymentMethod token carries them.
		b = append(b, "&payment_method_data[type]="...)
		b = append(b, typ...)
	}
	b = append(b, "&payment_method_types[0]="...)
	return append(b, typ...), nil
}

// CapturePayment captures an authorized PaymentIntent. When Stripe says
// the intent is not capturable because it is already captured (this
// key's earlier try, past Stripe's 24 hours), the answer is its state.
func (c *Connector) CapturePayment(ctx context.Context, req processor.CaptureRequest) (processor.Payment, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return processor.Payment{}, invalid("capture", err.Error())
	}
	if req.Reference == "" {
		return processor.Payment{}, invalid("capture", "no payment reference")
	}
	amount, err := toStripeAmount(req.AmountMinor, req.Currency)
	if err != nil {
		return processor.Payment{}, invalid("capture", err.Error())
	}
	p := &stripeapi.PaymentIntentCaptureParams{AmountToCapture: stripeapi.Int64(amount)}
	p.SetIdempotencyKey(processor.RequestKey(req.IdempotencyKey, ""))
	pi, err := call(ctx, c, "capture", func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.client.V1PaymentIntents.Capture(ctx, req.Reference, p)
	})
	if err != nil {
		return c.alreadyFinal(ctx, req.Reference, err)
	}
	return paymentFrom(pi), nil
}

// CancelPayment cancels a PaymentIntent; one already canceled answers its
// state, as for CapturePayment.
func (c *Connector) CancelPayment(ctx context.Context, req processor.CancelRequest) (processor.Payment, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return processor.Payment{}, invalid("cancel", err.Error())
	}
	if req.Reference == "" {
		return processor.Payment{}, invalid("cancel", "no payment reference")
	}
	p := &stripeapi.PaymentIntentCancelParams{}
	p.SetIdempotencyKey(processor.RequestKey(req.IdempotencyKey, ""))
	pi, err := call(ctx, c, "cancel", func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.client.V1PaymentIntents.Cancel(ctx, req.Reference, p)
	})
	if err != nil {
		return c.alreadyFinal(ctx, req.Reference, err)
	}
	return paymentFrom(pi), nil
}

// alreadyFinal turns a capture's or cancel's payment_intent_unexpected_state
// refusal whose intent is captured or canceled already into that state:
// the processor's word on the payment, whether this operation did it (a try
// whose answer was lost, past Stripe's 24 hours) or another party did (an
// authorization Stripe let expire, a capture in its dashboard), which the
// engine tells apart by the amount. Stripe's refusal carries the intent; a
// captured or canceled one is final, so it is what a read would find. One
// the refusal does not carry, or not final, is read (reference): a refusal
// settles the operation for good, so the state must be known, not assumed.
// A read that fails is that error, which leaves the outcome unknown; one
// that finds the intent processing leaves it to be read again; any other
// state (still waiting for a capture, or for a payment method) leaves the
// refusal.
func (c *Connector) alreadyFinal(ctx context.Context, reference string, err error) (processor.Payment, error) {
	var pe *processor.Error
	if !errors.As(err, &pe) || pe.Code != string(stripeapi.ErrorCodePaymentIntentUnexpectedState) {
		return processor.Payment{}, err
	}
	var se *stripeapi.Error
	if errors.As(err, &se) && se.PaymentIntent != nil && final(se.PaymentIntent.Status) {
		return paymentFrom(se.PaymentIntent), nil
	}
	got, rerr := c.GetPayment(ctx, reference)
	switch {
	case rerr != nil:
		return processor.Payment{}, rerr
	case got.State == processor.PaymentCaptured || got.State == processor.PaymentCanceled ||
		got.State == processor.PaymentProcessing:
		return got, nil
	}
	return processor.Payment{}, err
}

// final says whether a PaymentIntent's status is one it never leaves.
func final(s stripeapi.PaymentIntentStatus) bool {
	return s == stripeapi.PaymentIntentStatusSucceeded || s == stripeapi.PaymentIntentStatusCanceled
}

// RefundPayment creates a Refund of the PaymentIntent.
func (c *Connector) RefundPayment(ctx context.Context, req processor.RefundRequest) (processor.Refund, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return processor.Refund{}, invalid("refund", err.Error())
	}
	if req.PaymentReference == "" {
		return processor.Refund{}, invalid("refund", "a refund needs a payment reference")
	}
	amount, err := toStripeAmount(req.AmountMinor, req.Currency)
	if err != nil {
		return processor.Refund{}, invalid("refund", err.Error())
	}
	p := &stripeapi.RefundCreateParams{PaymentIntent: stripeapi.String(req.PaymentReference),
		Amount: stripeapi.Int64(amount)}
	p.AddMetadata("cmpay_refund_id", req.RefundID)
	p.SetIdempotencyKey(processor.RequestKey(req.IdempotencyKey, ""))
	re, err := call(ctx, c, "refund", func(ctx context.Context) (*stripeapi.Refund, error) {
		return c.client.V1Refunds.Create(ctx, p)
	})
	if err != nil {
		return processor.Refund{}, err
	}
	return refundFrom(re), nil
}

// GetPayment reads a PaymentIntent.
func (c *Connector) GetPayment(ctx context.Context, reference string) (processor.Payment, error) {
	if reference == "" {
		return processor.Payment{}, &processor.Error{Kind: processor.KindNotFound, Op: "get_payment", Message: "no reference"}
	}
	pi, err := call(ctx, c, "get_payment", func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.client.V1PaymentIntents.Retrieve(ctx, reference, nil)
	})
	if err != nil {
		return processor.Payment{}, err
	}
	return paymentFrom(pi), nil
}

// FindPayments searches PaymentIntents by metadata['cmpay_payment_id'].
// Stripe's search is eventually consistent: a new intent can be missing
// for a minute or more.
func (c *Connector) FindPayments(ctx context.Context, paymentID string) ([]processor.Payment, error) {
	p := &stripeapi.PaymentIntentSearchParams{}
	p.Query = fmt.Sprintf("metadata['cmpay_payment_id']:'%s'", searchEscape(paymentID))
	return call(ctx, c, "find_payments", func(ctx context.Context) ([]processor.Payment, error) {
		out := []processor.Payment{}
		for pi, err := range c.client.V1PaymentIntents.Search(ctx, p) {
			if err != nil {
				return nil, err
			}
			out = append(out, paymentFrom(pi))
		}
		return out, nil
	})
}

// searchEscape escapes a value for a quoted string in Stripe's search
// query language.
func searchEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

// GetRefund reads a Refund.
func (c *Connector) GetRefund(ctx context.Context, reference string) (processor.Refund, error) {
	if reference == "" {
		return processor.Refund{}, &processor.Error{Kind: processor.KindNotFound, Op: "get_refund", Message: "no reference"}
	}
	re, err := call(ctx, c, "get_refund", func(ctx context.Context) (*stripeapi.Refund, error) {
		return c.client.V1Refunds.Retrieve(ctx, reference, nil)
	})
	if err != nil {
		return processor.Refund{}, err
	}
	return refundFrom(re), nil
}

// ListRefunds lists a PaymentIntent's refunds (every page).
func (c *Connector) ListRefunds(ctx context.Context, paymentReference string) ([]processor.Refund, error) {
	if paymentReference == "" {
		return nil, &processor.Error{Kind: processor.KindNotFound, Op: "list_refunds", Message: "no reference"}
	}
	p := &stripeapi.RefundListParams{PaymentIntent: stripeapi.String(paymentReference)}
	return call(ctx, c, "list_refunds", func(ctx context.Context) ([]processor.Refund, error) {
		out := []processor.Refund{}
		for re, err := range c.client.V1Refunds.List(ctx, p) {
			if err != nil {
				return nil, err
			}
			out = append(out, refundFrom(re))
		}
		return out, nil
	})
}

func isAsync(pi *stripeapi.PaymentIntent) bool {
	return slices.ContainsFunc(pi.PaymentMethodTypes, func(t string) bool { return t == "pix" || t == "boleto" })
}
