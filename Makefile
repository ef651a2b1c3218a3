# Shortcuts for the scripts; each works without make too.
.PHONY: run test bench bench-admin soak stress

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
