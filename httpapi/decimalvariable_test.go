package httpapi_test

import (
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A Decimal variable of the wrong JSON type (an object, a boolean, a list)
// is a variable-coercion error like a number for a String!: nothing in the
// operation runs. Today the scalar refuses it only when its field runs, so
// another mutation of the same operation has already created a payment.
func TestDecimalVariableOfWrongTypeRunsNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, v := range []string{`{"x":1}`, `true`, `[1]`} {
			body := `{"query":"mutation($a: Decimal!) {` +
				` a: createPayment(input:{clientId:\"c1\",amount:\"1\",currency:\"BRL\",method:PIX}, idempotencyKey:\"first-` + v[:1] + `\") { replayed }` +
				` b: createPayment(input:{clientId:\"c1\",amount:$a,currency:\"BRL\",method:PIX}, idempotencyKey:\"second\") { replayed } }",` +
				`"variables":{"a":` + v + `}}`
			res := b.post(t, body)
			if res.code() != "GRAPHQL_VALIDATION_FAILED" {
				t.Errorf("Decimal variable %s: %+v, want a variable error (GRAPHQL_VALIDATION_FAILED)", v, res.Errors)
			}
			if strings.Contains(string(res.Data["a"]), "replayed") {
				t.Errorf("Decimal variable %s: the other mutation ran: %s", v, res.Data["a"])
			}
		}
		var n int64
		if err := db.Gorm.Table("payments").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d payments were created by operations with a bad variable, want 0", n)
		}
	})
}
