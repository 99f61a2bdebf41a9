package pgm

// factor is a dense table over an ascending attribute set, row-major, used
// by variable elimination. Values are probabilities.
type factor struct {
	attrs []int
	vals  []float64
	// key, when set, names the table within one reduceCache (a reduced
	// clique, a branch conditional, an elimination step's result): steps
	// whose factors all have keys are named after them, so that the
	// queries of a call that repeat a step share its result.
	key string
}
