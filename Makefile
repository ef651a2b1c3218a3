# Shortcuts for the scripts; each works without make too.
.PHONY: run test bench bench-admin soak stress client-stress

run:
	go run .

test:
	./scripts/test.sh

bench:
	./scripts/bench.sh

bench-admin:
	./scripts/bench-admin.sh

soak:
	./scripts/soak.sh

# The concurrent-operations test at 200 requests per client (20 on SQLite,
# 40 on PostgreSQL in the default run).
stress:
	CMPAY_STRESS_ROUNDS=200 go test -race -count=1 -run '^TestMixedOperationsOnThreeInstances$$' ./payments/

# The TypeScript client's tests at 40 killed payers and 200 browser rounds
# (30 and 60 in the default run); the client built first, as npm test needs.
client-stress:
	cd clients/typescript && npm run build && CMPAY_REQUIRE_BROWSER=1 CMPAY_TS_NODE_ROUNDS=40 CMPAY_TS_BROWSER_ROUNDS=200 npm test
