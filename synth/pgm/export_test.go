package pgm

// MarginalLog exports the log-space elimination oracle to the external
// tests.
func MarginalLog(m *Model, attrs []int) []float64 { return m.marginalLog(attrs) }
