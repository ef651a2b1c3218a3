# Shortcuts for the scripts; each works without make too.
.PHONY: run test bench bench-admin soak

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
