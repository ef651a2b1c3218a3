package database

// BuildFingerprint is buildFingerprint, for the tests that change a model.
var BuildFingerprint = buildFingerprint

// SchemaCatalog is schemaCatalog, for the tests of what its digest covers.
var SchemaCatalog = schemaCatalog
