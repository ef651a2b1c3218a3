package main

// Code generation. The generated files are committed, so a fresh clone
// builds without running these; scripts/test.sh checks they are fresh.
//go:generate go run github.com/99designs/gqlgen generate
