package database

// BuildFingerprint is buildFingerprint, for the tests that change a model.
var BuildFingerprint = buildFingerprint
