package httpapi

// WriteCreated and WriteChanged let the tests answer results that only an
// engine calling a processor produces (a PROCESSING payment, a decline, a
// pending capture, a refund in flight or failed), built from payments
// values.
var (
	WriteCreated = writeCreated
	WriteChanged = writeChanged
)
