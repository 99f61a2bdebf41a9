package pgm

// factor is a dense table over an ascending attribute set, row-major, used
// by variable elimination. Values are probabilities.
type factor struct {
	attrs []int
	vals  []float64
}
