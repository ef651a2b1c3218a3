package payments

// Export reads pages of 100 in this package's tests, set before any test
// runs: TestExportMatchesList then walks several pages over a few hundred
// payments instead of a few thousand.
func init() { exportPageSize = 100 }
